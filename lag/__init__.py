"""Consumer-lag evaluation, Burrow-compatible, with lag in seconds and the Burrow v3 HTTP API (issue #5)."""

__all__: list[str] = []
