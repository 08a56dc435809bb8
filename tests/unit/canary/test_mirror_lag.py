"""Mirror mode's replication lag and families, from scripted probe histories; no Kafka.

Times are monotonic seconds. Lag rule numbers refer to `canary.mirror.MirrorLag`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry

from canary.events import ProbeResult
from canary.mirror import MirrorLag, MirrorMetrics


@dataclass(frozen=True)
class Case:
    steps: tuple[tuple[str, int, int, float], ...]
    """(kind, partition, sequence, now): kind is send, ack, fail or read."""
    now: float
    want: dict[int, float]


CASES = [
    pytest.param(Case((), 5.0, {}), id="nothing-sent-nothing-known"),
    pytest.param(Case((("send", 0, 0, 1.0), ("ack", 0, 0, 1.01)), 4.0, {0: 3.0}), id="acked-unread-ages"),
    pytest.param(
        Case((("send", 0, 0, 1.0), ("ack", 0, 0, 1.01), ("read", 0, 0, 1.02)), 4.0, {0: 0.0}),
        id="read-ends-the-lag",
    ),
    pytest.param(Case((("send", 0, 0, 1.0),), 4.0, {0: 0.0}), id="in-flight-is-not-lag-yet"),
    pytest.param(Case((("send", 0, 0, 1.0), ("fail", 0, 0, 3.0)), 4.0, {0: 0.0}), id="rule2-failed-never-counts"),
    pytest.param(
        Case((("send", 0, 0, 1.0), ("read", 0, 0, 1.01), ("ack", 0, 0, 1.02)), 4.0, {0: 0.0}),
        id="rule2-read-before-ack",
    ),
    pytest.param(
        Case(
            (("send", 0, 0, 1.0), ("ack", 0, 0, 1.1), ("send", 0, 1, 2.0), ("ack", 0, 1, 2.1), ("read", 0, 1, 2.2)),
            4.0,
            {0: 3.0},
        ),
        id="rule1-oldest-unread-counts-even-after-a-newer-read",
    ),
    pytest.param(
        Case(
            (("send", 0, 0, 1.0), ("ack", 0, 0, 1.1), ("send", 1, 0, 1.0), ("ack", 1, 0, 1.1), ("read", 1, 0, 1.5)),
            101.0,
            {0: 100.0, 1: 0.0},
        ),
        id="per-partition-and-past-the-loss-deadline",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_lag(case: Case) -> None:
    lag = MirrorLag(retain_s=3600)
    for kind, partition, sequence, now in case.steps:
        if kind == "send":
            lag.sent(partition, sequence, now)
        elif kind == "ack":
            lag.acked(partition, sequence)
        else:  # fail, read
            lag.ended(partition, sequence)
    assert lag.lag_s(case.now) == pytest.approx(case.want)


def test_rule3_unread_probes_are_forgotten_after_retain_s() -> None:
    lag = MirrorLag(retain_s=10)
    for sequence, now in enumerate((0.0, 5.0, 12.0)):
        lag.sent(0, sequence, now)
        lag.acked(0, sequence)
    lag.forget(14.0)
    assert (lag.given_up, lag.lag_s(14.0)) == (1, {0: 9.0})


T0 = datetime(2026, 11, 21, tzinfo=UTC)
MIRRORED = ProbeResult(
    time=T0, cluster="src", topic="mon", partition=2, broker=1, rack=None, client_rack=None, producer_id="me",
    sequence=0, produce_ok=True, produce_latency_s=0.003, consume_ok=True, e2e_latency_s=0.04, offset=5,
)  # fmt: skip


def test_metrics_count_each_fate_per_source_partition() -> None:
    registry = CollectorRegistry()
    metrics = MirrorMetrics(registry, "src", "dst", "mon")
    metrics.record(MIRRORED)
    metrics.record(replace(MIRRORED, consume_ok=False, e2e_latency_s=None, lost=True))
    metrics.record(replace(MIRRORED, duplicate=True, produce_latency_s=None))
    metrics.record(
        replace(
            MIRRORED, produce_ok=False, produce_latency_s=None, consume_ok=None, e2e_latency_s=None,
            error="_MSG_TIMED_OUT", offset=None,
        )
    )  # fmt: skip
    metrics.record(replace(MIRRORED, produce_ok=False, produce_latency_s=2.5, error="_SLO_EXCEEDED"))  # late ack
    metrics.snapshot.lag_s = {2: 7.5}
    metrics.snapshot.target_partitions = 3
    labels = {"source_cluster": "src", "target_cluster": "dst", "topic": "mon", "partition": "2"}

    def value(name: str, **extra: str) -> float | None:
        return registry.get_sample_value(f"kafka_pulse_canary_mirror_{name}", {**labels, **extra})

    assert value("produced_total") == 3  # the late ack was acknowledged and mirrored
    assert value("mirrored_total") == 2
    assert value("lost_total") == 1
    assert value("duplicated_total") == 1
    assert value("produce_errors_total", error="_MSG_TIMED_OUT") == 1
    assert value("produce_errors_total", error="_SLO_EXCEEDED") == 1
    assert value("replication_latency_seconds_count") == 2
    assert value("replication_latency_seconds_sum") == pytest.approx(0.08)
    assert value("lag_seconds") == 7.5
    topic_labels = {k: v for k, v in labels.items() if k != "partition"}
    assert registry.get_sample_value("kafka_pulse_canary_mirror_target_partitions", topic_labels) == 3
    assert registry.get_sample_value("kafka_pulse_canary_mirror_source_partitions", topic_labels) is None  # unknown
