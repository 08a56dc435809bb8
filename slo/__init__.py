"""SLO specs, the PySpark burn-rate job, error budgets and Prometheus rule generation.

Stages by module: `spec` (YAML and OpenSLO -> `model.Slo`), `policy` (pure budget and burn-rate math), `job` (the
Spark job: `evaluate`, `backtest`, `minute_series`), `results` (what it returns, and `alert_states` for
`alerting`), `output` (Parquet and Pushgateway), `report` (budget reports), `rules_files` (Prometheus rules),
`session.spark_session`. Every export is imported on first use, so validating a spec never loads Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulse.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from slo.alerting import SloAlertDelivery
    from slo.bucket_table import BucketTable
    from slo.buckets import backtest_table, evaluate_table, minute_series_table
    from slo.evaluation import floor_minute
    from slo.job import backtest, evaluate, minute_series
    from slo.model import Slo
    from slo.output import PushFailed, gauges, push_gauges, write_results
    from slo.policy import parse_duration_s
    from slo.report import PERIOD_UNITS, InstanceMinutes, report_json, slo_report
    from slo.report_render import to_html, to_markdown
    from slo.results import BacktestResult, SloResult, alert_states, iso
    from slo.rules import RuleOptions
    from slo.rules_files import (
        NoPrometheusSli,
        check_output,
        load_rule_slos,
        output_files,
        rules_text,
        select,
        stale_files,
        write_files,
    )
    from slo.session import spark_session
    from slo.spec import describe, load_slos
    from slo.stream import (
        BucketStream,
        StreamSettings,
        Topic,
        dropped_as_late,
        kafka_rows,
        package_settings,
        spark_kafka_options,
    )

__all__ = [
    "PERIOD_UNITS",
    "BacktestResult",
    "BucketStream",
    "BucketTable",
    "InstanceMinutes",
    "NoPrometheusSli",
    "PushFailed",
    "RuleOptions",
    "Slo",
    "SloAlertDelivery",
    "SloResult",
    "StreamSettings",
    "Topic",
    "alert_states",
    "backtest",
    "backtest_table",
    "check_output",
    "describe",
    "dropped_as_late",
    "evaluate",
    "evaluate_table",
    "floor_minute",
    "gauges",
    "iso",
    "kafka_rows",
    "load_rule_slos",
    "load_slos",
    "minute_series",
    "minute_series_table",
    "output_files",
    "package_settings",
    "parse_duration_s",
    "push_gauges",
    "report_json",
    "rules_text",
    "select",
    "slo_report",
    "spark_kafka_options",
    "spark_session",
    "stale_files",
    "to_html",
    "to_markdown",
    "write_files",
    "write_results",
]

_HOMES = {
    "PERIOD_UNITS": "slo.report",
    "BucketStream": "slo.stream",
    "BacktestResult": "slo.results",
    "InstanceMinutes": "slo.report",
    "BucketTable": "slo.bucket_table",
    "NoPrometheusSli": "slo.rules_files",
    "PushFailed": "slo.output",
    "RuleOptions": "slo.rules",
    "Slo": "slo.model",
    "SloAlertDelivery": "slo.alerting",
    "SloResult": "slo.results",
    "StreamSettings": "slo.stream",
    "Topic": "slo.stream",
    "alert_states": "slo.results",
    "backtest": "slo.job",
    "backtest_table": "slo.buckets",
    "check_output": "slo.rules_files",
    "describe": "slo.spec",
    "dropped_as_late": "slo.stream",
    "evaluate": "slo.job",
    "evaluate_table": "slo.buckets",
    "floor_minute": "slo.evaluation",
    "gauges": "slo.output",
    "iso": "slo.results",
    "kafka_rows": "slo.stream",
    "load_rule_slos": "slo.rules_files",
    "load_slos": "slo.spec",
    "minute_series": "slo.job",
    "minute_series_table": "slo.buckets",
    "output_files": "slo.rules_files",
    "package_settings": "slo.stream",
    "parse_duration_s": "slo.policy",
    "push_gauges": "slo.output",
    "report_json": "slo.report",
    "rules_text": "slo.rules_files",
    "select": "slo.rules_files",
    "slo_report": "slo.report",
    "spark_kafka_options": "slo.stream",
    "spark_session": "slo.session",
    "stale_files": "slo.rules_files",
    "to_html": "slo.report_render",
    "to_markdown": "slo.report_render",
    "write_files": "slo.rules_files",
    "write_results": "slo.output",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562), so importing the package is free."""

if not TYPE_CHECKING:  # mypy reads the imports above, so a name missing from them is an error, not an `object`
    __getattr__ = lazy_exports(__name__, _HOMES)
