"""The check's noisy-neighbour lines: groups a running `kafka-pulse run` names as reading from disk on a broker whose
produce latency is up (lag/serve exports them on /metrics). One snapshot of offsets cannot tell this, so the
check reads the run's verdict; with no run listening, or a run without a slow-broker detector, there is nothing to
add and the lag section stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kafka_pulse.check.consult.run_metrics import RunMetrics
from kafka_pulse.check.facts import NotAvailable, ProbeFailed
from kafka_pulse.check.judge.verdict import Section, Status

NAMED = "kafka_pulse_noisy_neighbour"
LAG = "kafka_pulse_noisy_neighbour_lag_seconds"
WINDOW = "kafka_pulse_noisy_neighbour_page_cache_window_seconds"
LATENCY = "kafka_pulse_noisy_neighbour_produce_latency_seconds"


@dataclass(frozen=True)
class NoisyNeighbourFact:
    """One (broker, group, topic) the run names, with its numbers."""

    broker: int
    group: str
    topic: str
    lag_seconds: float | None
    window_s: float | None
    produce_latency_ms: float | None

    def describe(self) -> str:
        """The WARN line: broker, group, topic and the numbers."""
        back = "" if self.lag_seconds is None else f" {self.lag_seconds:.0f} s back"
        window = "" if self.window_s is None else f", beyond the {self.window_s:.0f} s page cache"
        latency = "" if self.produce_latency_ms is None else f" ({self.produce_latency_ms:.0f} ms)"
        return (
            f"noisy neighbour on broker {self.broker}: group {self.group} reads topic {self.topic}{back}{window}, "
            f"while the broker's produce latency is up{latency}"
        )


NoisyNeighbourFacts = list[NoisyNeighbourFact] | NotAvailable | ProbeFailed


def parse_noisy_neighbours(text: str, cluster: str) -> list[NoisyNeighbourFact]:
    """The diagnoses of `cluster` in a /metrics text (pure), sorted by broker, group and topic; ValueError when it
    is not Prometheus text."""
    from prometheus_client.parser import text_string_to_metric_families  # only with a run's text to parse

    named: set[tuple[str, str, str]] = set()
    values: dict[str, dict[tuple[str, ...], float]] = {LAG: {}, WINDOW: {}, LATENCY: {}}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if labels.get("cluster") != cluster:
                continue
            key = (labels.get("broker", ""), labels.get("group", ""), labels.get("topic", ""))
            if sample.name == NAMED and sample.value == 1:
                named.add(key)
            elif sample.name in (LAG, WINDOW):
                values[sample.name][key] = float(sample.value)
            elif sample.name == LATENCY:
                values[LATENCY][key[:1]] = float(sample.value)
    out = []
    for broker, group, topic in sorted(named, key=lambda k: (int(k[0]) if k[0].isdigit() else -1, k[1], k[2])):
        latency = values[LATENCY].get((broker,))
        out.append(
            NoisyNeighbourFact(
                int(broker) if broker.isdigit() else -1,
                group,
                topic,
                values[LAG].get((broker, group, topic)),
                values[WINDOW].get((broker, group, topic)),
                None if latency is None else latency * 1000.0,
            )
        )
    return out


def read_noisy_neighbours(run: RunMetrics, cluster: str) -> NoisyNeighbourFacts:
    """What the run whose /metrics `run` reads names for `cluster`."""
    return run.parsed(lambda text: parse_noisy_neighbours(text, cluster))


def add_noisy_neighbours(lag: Section, facts: NoisyNeighbourFacts) -> Section:
    """The lag section with the run's diagnoses: WARN and a reason line each when there are any (a group is hurting
    other topics' producers: a fault, unlike lag alone); `details.noisy_neighbours` lists them (empty otherwise)."""
    found: Sequence[NoisyNeighbourFact] = facts if isinstance(facts, list) else []
    details = {
        **lag.details,
        "noisy_neighbours": [
            {
                "broker": f.broker,
                "group": f.group,
                "topic": f.topic,
                "lag_seconds": f.lag_seconds,
                "page_cache_window_s": f.window_s,
                "produce_latency_ms": f.produce_latency_ms,
            }
            for f in found
        ],
    }
    if not found:
        return replace(lag, details=details)
    status = lag.status.at_least(Status.WARN)
    brokers = sorted({f.broker for f in found})
    summary = f"noisy neighbour on broker {', '.join(map(str, brokers))}; {lag.summary}"
    reasons = (*(f.describe() for f in found), *lag.reasons)
    return replace(lag, status=status, summary=summary, reasons=reasons, details=details)
