"""The check's slow-broker lines: brokers a running `kafka-pulse run` flags slow (collectors/slow_broker.py exports
the verdicts on /metrics). Slowness is judged over minutes against history and peers, which one check cannot do, so
the check reads the run's verdict; with no run listening there is nothing to add and the brokers section stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kafka_pulse.check.consult.run_metrics import RunMetrics
from kafka_pulse.check.facts import NotAvailable, ProbeFailed
from kafka_pulse.check.judge.verdict import Section, Status

SLOW = "kafka_pulse_broker_slow"
SCORE = "kafka_pulse_broker_slow_score"
REASON = "kafka_pulse_broker_slow_reason"
VALUE, PEERS, HISTORY = (f"kafka_pulse_broker_slow_signal_{k}" for k in ("value", "peers", "history"))


@dataclass(frozen=True)
class SlowBrokerFact:
    """One broker the run flags slow, with its worst signal's numbers."""

    broker: int
    score: float | None
    signal: str
    """The worst elevated signal (`probe_rtt_ms`, ...), or the verdict word (`recovering`, `suspended`)."""
    value: float | None
    peers: float | None
    history: float | None

    def describe(self) -> str:
        """The WARN line: the word slow, the broker, the reason and the numbers against its peers."""
        unit = " ms" if self.signal.endswith("_ms") else ""

        def num(v: float | None) -> str:
            return "-" if v is None else f"{v:.0f}{unit}" if abs(v) >= 10 else f"{v:.2f}{unit}"

        score = "" if self.score is None else f", score x{self.score:.1f}"
        if self.value is None:
            return f"broker {self.broker} is slow ({self.signal}{score})"
        return (
            f"broker {self.broker} is slow: {self.signal} {num(self.value)} against its peers' median "
            f"{num(self.peers)} (own history {num(self.history)}){score}"
        )


SlowBrokerFacts = list[SlowBrokerFact] | NotAvailable | ProbeFailed


def parse_slow_brokers(text: str, cluster: str) -> list[SlowBrokerFact]:
    """The flagged brokers of `cluster` in a /metrics text (pure), by broker id; ValueError when it is not
    Prometheus text."""
    from prometheus_client.parser import text_string_to_metric_families  # only with a run's text to parse

    flagged: set[str] = set()
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    numbers: dict[str, dict[tuple[str, str], float]] = {VALUE: {}, PEERS: {}, HISTORY: {}}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if labels.get("cluster") != cluster:
                continue
            broker = labels.get("broker", "")
            if sample.name == SLOW and sample.value == 1:
                flagged.add(broker)
            elif sample.name == SCORE:
                scores[broker] = float(sample.value)
            elif sample.name == REASON and sample.value == 1:
                reasons[broker] = labels.get("reason", "")
            elif sample.name in numbers:
                numbers[sample.name][(broker, labels.get("signal", ""))] = float(sample.value)
    out = []
    for broker in sorted(flagged, key=lambda b: int(b) if b.isdigit() else -1):
        signal = reasons.get(broker, "unknown")
        key = (broker, signal)
        out.append(
            SlowBrokerFact(
                int(broker) if broker.isdigit() else -1,
                scores.get(broker),
                signal,
                numbers[VALUE].get(key),
                numbers[PEERS].get(key),
                numbers[HISTORY].get(key),
            )
        )
    return out


def read_slow_brokers(run: RunMetrics, cluster: str) -> SlowBrokerFacts:
    """What the run whose /metrics `run` reads flags for `cluster`."""
    return run.parsed(lambda text: parse_slow_brokers(text, cluster))


def add_slow_brokers(brokers: Section, facts: SlowBrokerFacts) -> Section:
    """The brokers section with the run's slow flags: WARN (unless already worse) and a reason line per broker,
    naming it as a culprit; `details.slow_brokers` lists them (empty when none, or no run answers)."""
    found: Sequence[SlowBrokerFact] = facts if isinstance(facts, list) else []
    details = {
        **brokers.details,
        "slow_brokers": [
            {
                "broker": f.broker,
                "score": f.score,
                "signal": f.signal,
                "value": f.value,
                "peers_median": f.peers,
                "history_median": f.history,
            }
            for f in found
        ],
    }
    if not found:
        return replace(brokers, details=details)
    status = brokers.status.at_least(Status.WARN)
    ids = [f.broker for f in found]
    summary = f"{brokers.summary}; slow: {', '.join(f'broker {b}' for b in ids)}"
    culprits = (*brokers.culprits, *(b for b in ids if b not in brokers.culprits))
    reasons = (*brokers.reasons, *(f.describe() for f in found))
    return replace(brokers, status=status, summary=summary, reasons=reasons, culprits=culprits, details=details)
