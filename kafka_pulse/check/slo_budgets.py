"""The SLO job's latest results for the check, without Spark: the newest `evaluation-*.parquet` of
`slo.results_dir` (slo/output.py's `results_table` columns), else the `kafka-pulse-slo` group on
`slo.pushgateway_url`. With neither, or no SLOs at all, the budgets are "not available".
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import FailureKind, NotAvailable, ProbeFailed, SloBudget, SloFacts
from pulse.config import PulseConfig

PUSH_JOB = "kafka-pulse-slo"
"""The Pushgateway job slo/output.py pushes under."""
_RESERVED = {"slo", "job", "instance", "window", "severity", "reason"}


def stale_after_s(config: PulseConfig) -> float:
    """Results older than three evaluation periods (at least three minutes) are stale: the job has stopped."""
    return max(3 * config.slo.schedule_s, 180.0)


def read_slo_budgets(config: PulseConfig, deadline: Deadline) -> SloFacts | NotAvailable | ProbeFailed:
    if not (config.slos or config.slo.spec):
        return NotAvailable("no SLOs configured (`slos:` or `slo.spec`)")
    if not config.slo.enabled:
        return NotAvailable("slo.enabled is false")
    if config.slo.results_dir is not None:
        return read_parquet(config.slo.results_dir)
    if config.slo.pushgateway_url is not None:
        return read_pushgateway(config.slo.pushgateway_url, deadline)
    return NotAvailable(
        "neither slo.results_dir nor slo.pushgateway_url is set, so the SLO job's results cannot be found"
    )


def read_parquet(directory: Path) -> SloFacts | NotAvailable | ProbeFailed:
    """The newest evaluation file (names sort by their UTC time stamp)."""
    import pyarrow.parquet as pq

    files = sorted(directory.glob("evaluation-*.parquet")) if directory.is_dir() else []
    if not files:
        return NotAvailable(f"no evaluation-*.parquet in {directory} yet (`kafka-pulse run` writes one per schedule)")
    newest = files[-1]
    try:
        rows: list[dict[str, Any]] = pq.read_table(newest).to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        return ProbeFailed(FailureKind.ERROR, f"{newest}: {exc}")
    budgets = tuple(
        SloBudget(
            name=str(row["name"]),
            labels=json.loads(row.get("labels") or "{}"),
            budget_remaining=row.get("budget_remaining"),
            page_firing=bool(row.get("page_firing")),
            ticket_firing=bool(row.get("ticket_firing")),
            exhaustion_at=_utc(row.get("exhaustion_at")),
        )
        for row in rows
    )
    times = [t for t in (_utc(row.get("at")) for row in rows) if t is not None]
    return SloFacts(f"parquet:{newest}", max(times) if times else None, budgets)


def _utc(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def read_pushgateway(url: str, deadline: Deadline) -> SloFacts | NotAvailable | ProbeFailed:
    """The gauges of job `kafka-pulse-slo` from the Pushgateway's own /metrics."""
    import httpx

    try:
        with httpx.Client(timeout=deadline.share(0.5, cap_s=2.0), trust_env=False) as client:
            response = client.get(f"{url}/metrics")
            response.raise_for_status()
    except httpx.HTTPError as exc:
        return ProbeFailed(FailureKind.ERROR, f"Pushgateway {url}: {type(exc).__name__}: {exc}")
    return pushgateway_budgets(response.text, f"pushgateway:{url}")


def pushgateway_budgets(text: str, source: str) -> SloFacts | NotAvailable:
    """Budgets from exposition text (pure): remaining ratio, firing severities and evaluation time per instance."""
    from prometheus_client.parser import text_string_to_metric_families

    remaining: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    firing: dict[tuple[str, tuple[tuple[str, str], ...]], set[str]] = defaultdict(set)
    evaluated: list[float] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if labels.get("job") != PUSH_JOB or "slo" not in labels:
                continue
            key = (labels["slo"], tuple(sorted((k, v) for k, v in labels.items() if k not in _RESERVED)))
            if sample.name == "kafka_pulse_slo_error_budget_remaining_ratio":
                remaining[key] = sample.value
            elif sample.name == "kafka_pulse_slo_alert_firing" and sample.value == 1:
                firing[key].add(labels.get("severity", ""))
            elif sample.name == "kafka_pulse_slo_evaluation_timestamp_seconds":
                evaluated.append(sample.value)
            elif sample.name == "kafka_pulse_slo_objective_ratio":
                remaining.setdefault(key, float("nan"))
    if not remaining:
        return NotAvailable(f"no {PUSH_JOB} gauges on {source.removeprefix('pushgateway:')} yet")
    budgets = tuple(
        SloBudget(
            name=name,
            labels=dict(labels),
            budget_remaining=None if value != value else value,  # NaN: the instance has no events
            page_firing="page" in firing[(name, labels)],
            ticket_firing="ticket" in firing[(name, labels)],
        )
        for (name, labels), value in sorted(remaining.items())
    )
    at = datetime.fromtimestamp(max(evaluated), tz=UTC) if evaluated else None
    return SloFacts(source, at, budgets)
