"""SLO specs, the PySpark burn-rate job, error budgets and Prometheus rule generation (issue #6)."""

__all__: list[str] = []
