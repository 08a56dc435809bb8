"""Synthetic producer/consumer: availability, latency and loss per broker and AZ, and the SLI event log (issue #4)."""

__all__: list[str] = []
