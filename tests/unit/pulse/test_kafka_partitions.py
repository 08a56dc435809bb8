"""The one under-min-ISR rule and the ELR verdict (KIP-966) as a table, and the DescribeTopicPartitions answer as
kafka-python gives it (pulse/kafka/partitions.py, pulse/kafka/elr.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pulse.kafka.elr import ElrRead, elr_topics, parse_answer, with_elr
from pulse.kafka.partitions import ElrVerdict, PartitionState


@pytest.mark.parametrize(
    ("replicas", "isr", "min_isr", "elr", "want"),
    [
        pytest.param((1, 2, 3), (1, 2, 3), 2, (), None, id="full-isr"),
        pytest.param((1, 2, 3), (1, 2), 2, (), None, id="shrunk-to-min"),
        # Kafka >= 3.7 requires min(min.insync.replicas, replicas) (apache/kafka#14594): a full ISR takes writes.
        pytest.param((1, 2), (1, 2), 3, (), None, id="rf2-full-isr-under-min3-is-not-short"),
        pytest.param((1,), (1,), 2, None, None, id="rf1-full-isr-under-broker-default-2"),
        pytest.param((1, 2), (1,), 3, (2,), ElrVerdict.RECOVERABLE, id="shrunk-below-capped-min-elr"),
        # KIP-966: replicas leaving an ISR below min ISR join the ELR (seen on 4.3.1: RF 3, min ISR 3, one kill).
        pytest.param((1, 2, 3), (1, 2), 3, (3,), ElrVerdict.RECOVERABLE, id="rf3-min3-one-down"),
        pytest.param((3,), (), 1, (3,), ElrVerdict.RECOVERABLE, id="offline-elr-holds-the-last-leader"),
        pytest.param((1, 2, 3), (1,), 2, (), ElrVerdict.ISR_ONLY, id="elr-empty-isr-left"),
        pytest.param((1, 2, 3), (1,), 2, None, ElrVerdict.UNKNOWN, id="elr-not-read"),
        pytest.param((1, 2, 3), (), 2, None, ElrVerdict.UNKNOWN, id="offline-elr-not-read"),
        # A min.insync.replicas change clears the ELR (seen on 4.3.1): an offline partition is then at risk.
        pytest.param((3,), (), 2, (), ElrVerdict.AT_RISK, id="isr-and-elr-empty"),
    ],
)
def test_under_min_isr_and_what_recovers_it(
    replicas: tuple[int, ...], isr: tuple[int, ...], min_isr: int, elr: tuple[int, ...] | None, want: ElrVerdict | None
) -> None:
    state = PartitionState("t", 0, isr[0] if isr else -1, replicas, isr, min_isr, elr)
    assert state.is_under_min_isr is (want is not None)
    assert state.elr_verdict is want


def test_verdicts_are_declared_in_order_of_growing_worry() -> None:
    """collectors' examples put the worst first by this order."""
    assert list(ElrVerdict) == [ElrVerdict.RECOVERABLE, ElrVerdict.ISR_ONLY, ElrVerdict.UNKNOWN, ElrVerdict.AT_RISK]


def partition(index: int, elr: list[int] | None, last: list[int] | None, error: int = 0) -> dict[str, Any]:
    return {
        "error_code": error,
        "partition_index": index,
        "leader_id": -1,
        "isr_nodes": [],
        "eligible_leader_replicas": elr,
        "last_known_elr": last,
    }


def test_an_answer_gives_each_partition_its_elr_and_errors_leave_them_unknown() -> None:
    answer = {
        "topics": [
            {"error_code": 0, "name": "a", "partitions": [partition(0, [3], [3]), partition(1, None, None)]},
            {"error_code": 0, "name": "b", "partitions": [partition(0, [2], None, error=9)]},
            {"error_code": 3, "name": "gone", "partitions": []},
        ],
        "next_cursor": None,
    }
    got = parse_answer(answer)
    assert got == {("a", 0): ((3,), (3,)), ("a", 1): ((), ())}  # kafka-python's None for [] and null: known empty


def test_only_topics_with_a_partition_under_min_isr_are_asked_and_the_rest_stay_unknown() -> None:
    states = [
        PartitionState("ok", 0, 1, (1, 2, 3), (1, 2, 3), 2),
        PartitionState("short", 0, 1, (1, 2, 3), (1,), 2),
        PartitionState("short", 1, 1, (1, 2, 3), (1,), 2),
    ]
    assert elr_topics(states) == ["short"]
    read = ElrRead({("short", 0): ((2,), ())})
    got = with_elr(states, read)
    assert [s.elr_verdict for s in got] == [None, ElrVerdict.RECOVERABLE, ElrVerdict.UNKNOWN]
