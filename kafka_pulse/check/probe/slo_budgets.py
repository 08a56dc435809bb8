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
from pulse.config import HttpClientConfig, PulseConfig
from pulse.names import (
    SLO_ALERT_FIRING_GAUGE,
    SLO_BUDGET_REMAINING_GAUGE,
    SLO_EVALUATED_GAUGE,
    SLO_OBJECTIVE_GAUGE,
    SLO_PUSH_JOB,
    SLO_RESULTS_GLOB,
    SloResultColumn,
)

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
        return read_pushgateway(config.slo.pushgateway_url, deadline, config.slo.pushgateway_client)
    return NotAvailable(
        "neither slo.results_dir nor slo.pushgateway_url is set, so the SLO job's results cannot be found"
    )


def read_parquet(directory: Path) -> SloFacts | NotAvailable | ProbeFailed:
    """The newest evaluation file (names sort by their UTC time stamp)."""
    import pyarrow.parquet as pq

    files = sorted(directory.glob(SLO_RESULTS_GLOB)) if directory.is_dir() else []
    if not files:
        return NotAvailable(f"no {SLO_RESULTS_GLOB} in {directory} yet (`kafka-pulse run` writes one per schedule)")
    newest = files[-1]
    try:
        rows: list[dict[str, Any]] = pq.read_table(newest).to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        return ProbeFailed(FailureKind.ERROR, f"{newest}: {exc}")
    budgets = tuple(
        SloBudget(
            name=str(row[SloResultColumn.NAME]),
            labels=json.loads(row.get(SloResultColumn.LABELS) or "{}"),
            budget_remaining=row.get(SloResultColumn.BUDGET_REMAINING),
            page_firing=bool(row.get(SloResultColumn.PAGE_FIRING)),
            ticket_firing=bool(row.get(SloResultColumn.TICKET_FIRING)),
            exhaustion_at=_utc(row.get(SloResultColumn.EXHAUSTION_AT)),
        )
        for row in rows
    )
    times = [t for t in (_utc(row.get(SloResultColumn.AT)) for row in rows) if t is not None]
    return SloFacts(f"parquet:{newest}", max(times) if times else None, budgets)


def _utc(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def read_pushgateway(
    url: str, deadline: Deadline, login: HttpClientConfig | None = None
) -> SloFacts | NotAvailable | ProbeFailed:
    """The gauges of job `kafka-pulse-slo` from the Pushgateway's own /metrics; `url` is shown without its login."""
    import httpx

    from pulse.http.client import outbound_client
    from pulse.redact import redact_text, redact_url

    shown = redact_url(url)
    try:
        with outbound_client(login, deadline.share(0.5, cap_s=2.0), base_url=url) as client:
            response = client.get("/metrics")
            response.raise_for_status()
    except httpx.HTTPError as exc:
        return ProbeFailed(FailureKind.ERROR, f"Pushgateway {shown}: {type(exc).__name__}: {redact_text(str(exc))}")
    return pushgateway_budgets(response.text, f"pushgateway:{shown}")


def pushgateway_budgets(text: str, source: str) -> SloFacts | NotAvailable:
    """Budgets from exposition text (pure): remaining ratio, firing severities and evaluation time per instance."""
    from prometheus_client.parser import text_string_to_metric_families

    remaining: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    firing: dict[tuple[str, tuple[tuple[str, str], ...]], set[str]] = defaultdict(set)
    evaluated: list[float] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if labels.get("job") != SLO_PUSH_JOB or "slo" not in labels:
                continue
            key = (labels["slo"], tuple(sorted((k, v) for k, v in labels.items() if k not in _RESERVED)))
            if sample.name == SLO_BUDGET_REMAINING_GAUGE:
                remaining[key] = sample.value
            elif sample.name == SLO_ALERT_FIRING_GAUGE and sample.value == 1:
                firing[key].add(labels.get("severity", ""))
            elif sample.name == SLO_EVALUATED_GAUGE:
                evaluated.append(sample.value)
            elif sample.name == SLO_OBJECTIVE_GAUGE:
                remaining.setdefault(key, float("nan"))
    if not remaining:
        return NotAvailable(f"no {SLO_PUSH_JOB} gauges on {source.removeprefix('pushgateway:')} yet")
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
