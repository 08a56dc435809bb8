"""DescribeQuorum's answer as kafka-pulse reads it (pulse/kafka/quorum.py), pure."""

from __future__ import annotations

from typing import Any

import pytest

from pulse.kafka.quorum import QuorumState, QuorumUnread, VoterState, parse_quorum


def answer(**partition: Any) -> dict[str, Any]:
    return {"topics": [{"partitions": [{"error_code": 0, **partition}]}]}


def replica(node: int, end: int, caught_up_ms: int = -1) -> dict[str, Any]:
    return {"replica_id": node, "log_end_offset": end, "last_caught_up_timestamp": caught_up_ms}


def test_voters_lag_behind_the_high_watermark_and_observers_are_listed_by_node() -> None:
    """A removed voter (KIP-853) answers among the observers; the leader lists the voter set it appended last."""
    state = parse_quorum(
        answer(
            leader_id=1, leader_epoch=4, high_watermark=100,
            current_voters=[replica(1, 100, 10_000), replica(2, 60, 7_000)],
            observers=[replica(5, 100), replica(3, 90)],
        ),
        now_s=12.0,
    )  # fmt: skip
    assert state == QuorumState(1, 4, 100, (VoterState(1, 0, 2.0), VoterState(2, 40, 5.0)), observers=(3, 5))


def test_no_leader_and_no_observers_read_as_none_and_empty() -> None:
    state = parse_quorum(answer(leader_id=-1, leader_epoch=5, high_watermark=-1, current_voters=[]), now_s=0.0)
    assert state == QuorumState(None, 5, -1, (), ())


def test_an_answer_without_the_metadata_partition_is_unread() -> None:
    with pytest.raises(QuorumUnread, match="unexpected answer"):
        parse_quorum({"topics": []}, now_s=0.0)
