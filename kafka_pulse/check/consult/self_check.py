"""The check's `self` section: is the `kafka-pulse run` on `http.listen` still doing its work? Read from that
process's /metrics (kafka_pulse/self_health.py's families): a component whose last successful cycle is older than
3 intervals is WARN; no process there is not available (INFO), never a verdict on Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kafka_pulse.check.consult.run_metrics import RunMetrics
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import NotAvailable, ProbeFailed
from kafka_pulse.check.judge.verdict import Section, Status
from kafka_pulse.self_health import STALE_INTERVALS, ComponentHealth, parse_self_health
from pulse.config import HttpConfig

SECTION = "self"

SelfHealthFacts = list[ComponentHealth] | NotAvailable | ProbeFailed


def self_health_facts(run: RunMetrics) -> SelfHealthFacts:
    """The components of the run whose /metrics `run` reads."""
    components = run.parsed(parse_self_health)
    if not isinstance(components, list):
        return components
    if not components:
        return NotAvailable(
            f"{run.url} is not a kafka-pulse run with self-health (an older version, or another command)"
        )
    return components


def read_self_health(http: HttpConfig, deadline: Deadline) -> SelfHealthFacts:
    """The components of the `run` listening on `http.listen`, with its login and TLS (a read of its own)."""
    return self_health_facts(RunMetrics(http, deadline))


def judge_self(facts: Sequence[ComponentHealth] | NotAvailable | ProbeFailed, now: datetime) -> Section:
    """WARN naming every stale component; OK when all are fresh; INFO when there is nothing to read."""
    if isinstance(facts, NotAvailable):
        return Section(SECTION, Status.INFO, "not available", (facts.reason,))
    if isinstance(facts, ProbeFailed):
        return Section(SECTION, Status.INFO, "not read", (facts.reason,))
    now_s = now.timestamp()
    stale = [c for c in facts if c.is_stale(now_s)]
    details = {
        "components": [
            {
                "component": c.component,
                "interval_s": c.interval_s,
                "last_success_s": c.last_success_s,
                "age_s": round(c.age_s(now_s), 3),
                "stale": c.is_stale(now_s),
            }
            for c in facts
        ],
        "stale_after_intervals": STALE_INTERVALS,
    }
    if stale:
        summary = f"{len(stale)} of {len(facts)} components stale: {', '.join(c.component for c in stale)}"
        return Section(SECTION, Status.WARN, summary, tuple(c.describe(now_s) for c in stale), details=details)
    return Section(SECTION, Status.OK, f"{len(facts)} components fresh", (), details=details)
