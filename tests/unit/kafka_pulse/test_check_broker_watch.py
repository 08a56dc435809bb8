"""The check's per-broker probes under one deadline: the later reads start once the brokers that answer have
answered, a silent broker is a timeout at the limit (never OK), and a round trip stops waiting on acks that only a
down broker can give. Probes are plain functions here (one blocks until released): no Kafka, no sockets."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import BrokerAddress
from kafka_pulse.check.probe.broker_watch import SILENT, BrokerWatch
from kafka_pulse.check.probe.round_trip import stalled_behind
from pulse.config import ClusterConfig
from pulse.kafka.broker_probe import CheckResult
from pulse.kafka.partitions import PartitionState

CLUSTER = ClusterConfig(name="unit", bootstrap_servers=["127.0.0.1:9"])
BROKERS = {b: BrokerAddress(b, f"kafka{b}", 9092) for b in (1, 2, 3)}


class Probes:
    """Broker 1 answers at once, broker 3 refuses at once, broker 2 never answers until `release` (a SIGSTOPped
    broker: the connection is accepted, nothing comes back)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, broker: BrokerAddress, limit: Deadline) -> CheckResult:
        if broker.id == 2:
            self.release.wait(limit.remaining())
            return CheckResult(2, False, 0.0, SILENT)
        if broker.id == 3:
            return CheckResult(3, False, 0.001, "refused")
        return CheckResult(broker.id, True, 0.001)


@pytest.fixture
def probes() -> Iterator[Probes]:
    answers = Probes()
    yield answers
    answers.release.set()  # let the abandoned probe thread end


def test_later_reads_start_without_the_silent_broker_and_it_is_a_timeout_at_the_limit(probes: Probes) -> None:
    limit = Deadline.after(30.0)  # far: nothing below may wait for it
    watch = BrokerWatch(CLUSTER, BROKERS, limit, ask=probes)
    assert watch.answered(settle_s=0.05) == ["kafka1:9092"]
    assert watch.outcome(2) is None  # still waited for: not known down, and not OK
    assert watch.down() == {3}
    limit.at_s = time.monotonic()  # the limit comes
    results = watch.results()
    got = {b: (r.ok, r.error) for b, r in results.items()}
    assert got == {1: (True, None), 2: (False, SILENT), 3: (False, "refused")}
    assert watch.down() == {2, 3}


def test_answered_returns_at_once_when_every_probe_is_over(probes: Probes) -> None:
    probes.release.set()  # broker 2 fails fast too
    watch = BrokerWatch(CLUSTER, BROKERS, Deadline.after(30.0), ask=probes)
    assert watch.answered(settle_s=30.0) == ["kafka1:9092"]  # no settle wait: nothing is left to answer
    assert watch.down() == {2, 3}


def test_no_answer_at_all_waits_to_the_limit_and_names_nobody(probes: Probes) -> None:
    silent = {2: BROKERS[2]}
    watch = BrokerWatch(CLUSTER, silent, Deadline.after(0.2), ask=probes)
    assert watch.down() == frozenset()
    assert watch.answered(settle_s=0.01) == []
    assert watch.down() == {2}


def part(partition: int, leader: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState("__pulse_canary", partition, leader, (1, 2, 3), isr)


@pytest.mark.parametrize(
    ("settled", "down", "want"),
    [
        (set(), set(), {}),
        (set(), {2}, {0: 2, 1: 2, 2: 2}),  # replication 3: every acks=all produce waits on broker 2
        ({0}, {2}, {1: 2, 2: 2}),
        (set(), {3}, {0: 3, 2: 3}),  # partition 1's ISR has shrunk without broker 3
        (set(), {1, 3}, {0: 1, 1: 1, 2: 3}),  # the leader first, then the first in-sync follower
    ],
)
def test_stalled_behind(settled: set[int], down: set[int], want: dict[int, int]) -> None:
    layout = [part(0, 1, (1, 2, 3)), part(1, 2, (2, 1)), part(2, 3, (3, 1, 2))]
    assert dict(stalled_behind(layout, settled, down)) == want
