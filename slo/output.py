"""Where evaluation results go besides stdout: a Parquet file per run, and budget gauges pushed to a Pushgateway
for Grafana (names in docs/metrics.md, "SLO engine").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

from pulse.config import HttpClientConfig
from pulse.errors import PulseError
from pulse.http.client import outbound_client, split_userinfo
from pulse.names import (
    SLO_ALERT_FIRING_GAUGE,
    SLO_BUDGET_REMAINING_GAUGE,
    SLO_EVALUATED_GAUGE,
    SLO_OBJECTIVE_GAUGE,
    SLO_PUSH_JOB,
    SloResultColumn,
    slo_results_file,
)
from pulse.redact import redact_text, redact_url
from slo.policy import REPORTED_WINDOWS_S, format_duration
from slo.results import SloResult


class PushFailed(PulseError):
    """The Pushgateway could not be reached or refused the push."""


def results_table(results: Sequence[SloResult]) -> pa.Table:
    """One row per SLO instance; burn rates one column per window (`burn_rate_5m` ...)."""
    columns: dict[str, list[object]] = {
        SloResultColumn.AT: [r.at for r in results],
        SloResultColumn.NAME: [r.name for r in results],
        SloResultColumn.LABELS: [json.dumps(r.labels, sort_keys=True) for r in results],
        "objective": [r.objective for r in results],
        "window": [r.window for r in results],
        "good": [r.good for r in results],
        "total": [r.total for r in results],
        "sli": [r.sli for r in results],
        SloResultColumn.BUDGET_REMAINING: [r.budget_remaining for r in results],
    }
    for window in (format_duration(w) for w in REPORTED_WINDOWS_S):
        columns[f"burn_rate_{window}"] = [r.burn_rates.get(window) for r in results]
    for severity, column in (("page", SloResultColumn.PAGE_FIRING), ("ticket", SloResultColumn.TICKET_FIRING)):
        columns[column] = [any(a.firing for a in r.alerts if a.severity == severity) for r in results]
    columns[SloResultColumn.EXHAUSTION_AT] = [r.exhaustion_at for r in results]
    columns["projected_sli"] = [r.projected_sli for r in results]
    columns["skipped_rows"] = [sum(r.skipped_rows.values()) for r in results]
    schema = pa.schema(
        [
            (SloResultColumn.AT, pa.timestamp("us", tz="UTC")),
            (SloResultColumn.NAME, pa.string()),
            (SloResultColumn.LABELS, pa.string()),
            ("objective", pa.float64()),
            ("window", pa.string()),
            ("good", pa.float64()),
            ("total", pa.float64()),
            ("sli", pa.float64()),
            (SloResultColumn.BUDGET_REMAINING, pa.float64()),
            *[(f"burn_rate_{format_duration(w)}", pa.float64()) for w in REPORTED_WINDOWS_S],
            (SloResultColumn.PAGE_FIRING, pa.bool_()),
            (SloResultColumn.TICKET_FIRING, pa.bool_()),
            (SloResultColumn.EXHAUSTION_AT, pa.timestamp("us", tz="UTC")),
            ("projected_sli", pa.float64()),
            ("skipped_rows", pa.int64()),
        ]
    )
    return pa.table(columns, schema=schema)


def write_results(results: Sequence[SloResult], directory: Path) -> Path:
    """`<directory>/evaluation-<at>.parquet`; the directory is created when missing."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = results[0].at.strftime("%Y%m%dT%H%M%SZ") if results else "empty"
    path = directory / slo_results_file(stamp)
    pq.write_table(results_table(results), path)
    return path


def gauges(results: Sequence[SloResult]) -> CollectorRegistry:
    """A fresh registry holding one gauge family per figure, labelled by `slo` plus the instance's labels."""
    registry = CollectorRegistry()
    extra = sorted({key for r in results for key in r.labels})
    base = ["slo", *extra]

    def gauge(name: str, doc: str, more: Sequence[str] = ()) -> Gauge:
        return Gauge(name, doc, [*base, *more], registry=registry)

    objective = gauge(SLO_OBJECTIVE_GAUGE, "The SLO's objective as a ratio (0.999 for 99.9 %).")
    sli = gauge("kafka_pulse_slo_sli_ratio", "good / total over the SLO window; absent without events.")
    remaining = gauge(SLO_BUDGET_REMAINING_GAUGE, "1 - budget consumed; negative when overspent.")
    events = gauge("kafka_pulse_slo_events", "Events (or timeslices) counted in the SLO window.")
    burn = gauge("kafka_pulse_slo_burn_rate", "Error ratio / error budget over a window.", ["window"])
    firing = gauge(SLO_ALERT_FIRING_GAUGE, "1 while the severity's burn-rate alert fires.", ["severity"])
    exhaustion = gauge("kafka_pulse_slo_exhaustion_timestamp_seconds", "When the budget runs out at current rates.")
    skipped = gauge("kafka_pulse_slo_skipped_rows", "Malformed source rows skipped in this run.", ["reason"])
    evaluated = gauge(SLO_EVALUATED_GAUGE, "The evaluation time of these figures.")
    for r in results:
        labels = [r.name, *[r.labels.get(key, "") for key in extra]]
        objective.labels(*labels).set(r.objective / 100)
        events.labels(*labels).set(r.total)
        evaluated.labels(*labels).set(r.at.timestamp())
        if r.sli is not None:
            sli.labels(*labels).set(r.sli)
        if r.budget_remaining is not None:
            remaining.labels(*labels).set(r.budget_remaining)
        for window, value in r.burn_rates.items():
            if value is not None:
                burn.labels(*labels, window).set(value)
        for alert in r.alerts:
            firing.labels(*labels, alert.severity).set(1 if alert.firing else 0)
        if r.exhaustion_at is not None:
            exhaustion.labels(*labels).set(r.exhaustion_at.timestamp())
        for reason, count in r.skipped_rows.items():
            skipped.labels(*labels, reason).set(count)
    return registry


def push_gauges(
    results: Sequence[SloResult], url: str, timeout_s: float = 10.0, login: HttpClientConfig | None = None
) -> None:
    """Replace the `kafka-pulse-slo` group on the Pushgateway with these results (PUT semantics), through the one
    outbound client (`login`: `slo.pushgateway_client`; a `user:password@` in `url` also logs in)."""
    plain_url, _ = split_userinfo(url)
    shown = redact_url(url)
    with outbound_client(login, timeout_s, base_url=url) as client:
        # prometheus_client calls a handler with these keywords, and runs what it returns.
        def handler(
            url: str, method: str, timeout: float | None, headers: list[tuple[str, str]], data: bytes
        ) -> Callable[[], None]:
            def send() -> None:
                path = url.removeprefix(plain_url)
                response = client.request(method, path, headers=headers, content=data, timeout=timeout)
                if response.status_code >= 400:
                    text = response.text.strip()[:200]
                    raise PushFailed(f"Pushgateway at {shown}: HTTP {response.status_code}: {text}")

            return send

        try:
            push_to_gateway(plain_url, job=SLO_PUSH_JOB, registry=gauges(results), timeout=timeout_s, handler=handler)
        except (OSError, httpx.HTTPError) as exc:
            raise PushFailed(f"Pushgateway at {shown}: {redact_text(str(exc))}") from exc
