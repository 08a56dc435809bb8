"""SLO specs, the PySpark burn-rate job, error budgets and Prometheus rule generation.

Entry points by module, imported on use so that validating a spec never loads Spark: `spec.load_slos` and
`spec.parse_slos` (YAML and OpenSLO -> `model.Slo`), `policy` (pure budget and burn-rate math), `job.evaluate` and
`job.backtest` (the Spark job), `results` (what they return, and `alert_states` for `alerting`), `output`
(Parquet and Pushgateway), `session.spark_session`.
"""

__all__ = [
    "alerting",
    "evaluation",
    "job",
    "model",
    "openslo",
    "output",
    "policy",
    "results",
    "session",
    "sources",
    "spec",
]
