"""Names shared by a writer and its reader (label rules, push job, result files), declared once so they cannot drift.

Each name lives here, in the base, because two components (or a component and the application) use it.
"""

import re
from enum import StrEnum

LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""Prometheus and Alertmanager's rule for label and annotation names (`model.LabelName.IsValid`)."""

LABEL_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
"""A `{label}` placeholder in a link template (`alerting.runbook_url`); its name must match `LABEL_NAME`."""

NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""Host names, IPv4 addresses, cluster and client names."""

SLO_NAME = re.compile(r"[a-z0-9]([a-z0-9_.-]*[a-z0-9])?")
"""SLO names: they become rule group, alert and file names."""

TOPIC_NAME = re.compile(r"[A-Za-z0-9_.-]{1,249}")
"""Kafka's legal topic names (besides `.` and `..`)."""

SLO_PUSH_JOB = "kafka-pulse-slo"
"""The Pushgateway job the SLO evaluation pushes its budget gauges under and `check` reads back."""

SLO_OBJECTIVE_GAUGE = "kafka_pulse_slo_objective_ratio"
SLO_BUDGET_REMAINING_GAUGE = "kafka_pulse_slo_error_budget_remaining_ratio"
SLO_ALERT_FIRING_GAUGE = "kafka_pulse_slo_alert_firing"
SLO_EVALUATED_GAUGE = "kafka_pulse_slo_evaluation_timestamp_seconds"
"""The pushed gauge families `check` reads back (all of them: docs/metrics.md, "SLO engine")."""

LIBRDKAFKA_LOGS_METRIC = "kafka_pulse_librdkafka_logs"
"""librdkafka's log lines and errors by cluster, kind and outcome (pulse/kafka_log.py); every component that runs
a Kafka client exports it, `run` once for all, and the noise tests read it back."""

SLO_RESULTS_GLOB = "evaluation-*.parquet"
"""The SLO evaluation's result files in `slo.results_dir`; the newest by name is the latest evaluation."""


def slo_results_file(stamp: str) -> str:
    """The name of one evaluation's result file; `stamp` sorts by time (`YYYYMMDDTHHMMSSZ`)."""
    return f"evaluation-{stamp}.parquet"


class SloResultColumn(StrEnum):
    """Columns of the SLO result file that `check` reads (the full schema is `slo.output.results_table`'s)."""

    AT = "at"
    NAME = "name"
    LABELS = "labels"
    BUDGET_REMAINING = "budget_remaining"
    PAGE_FIRING = "page_firing"
    TICKET_FIRING = "ticket_firing"
    EXHAUSTION_AT = "exhaustion_at"
