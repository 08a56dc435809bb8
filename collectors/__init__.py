"""Broker JMX metrics and cluster state from the Admin API, exposed to Prometheus (issue #3)."""

__all__: list[str] = []
