"""Grafana dashboards built in code, with Prometheus rules and an Alertmanager example (issue #7)."""

__all__: list[str] = []
