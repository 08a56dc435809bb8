"""OffsetFetch answers and requests of pulse/kafka/group_offsets.py, without a broker: answers in kafka-python's
`to_dict()` shapes (v8+ names its groups, v2-v7 answer one at the top), requests as kafka-python encodes them."""

from __future__ import annotations

from typing import Any

from pulse.kafka.admin_client import kafka_python_warnings
from pulse.kafka.group_offsets import (
    COORDINATOR_MOVED,
    GROUP_ID_NOT_FOUND,
    UNANSWERED,
    GroupOffsets,
    offset_fetch_request,
    parse_answer,
)


def partition(index: int, offset: int, error: int = 0) -> dict[str, Any]:
    return {"partition_index": index, "committed_offset": offset, "committed_leader_epoch": -1, "metadata": "",
            "error_code": error}  # fmt: skip


def test_a_v8_answer_reads_each_group_and_leaves_out_partitions_without_a_commit() -> None:
    answer = {
        "throttle_time_ms": 0,
        "groups": [
            {"group_id": "a", "error_code": 0,
             "topics": [{"name": "t", "partitions": [partition(0, 5), partition(1, -1), partition(2, 9, error=3)]}]},
            {"group_id": "b", "error_code": GROUP_ID_NOT_FOUND, "topics": []},
            {"group_id": "c", "error_code": 16, "topics": []},
        ],
    }  # fmt: skip
    found = parse_answer(answer, ["a", "b", "c"])
    assert found["a"] == GroupOffsets("a", {("t", 0): 5})
    assert found["b"].skipped and found["b"].error == "GroupIdNotFoundError" and not found["b"].offsets
    assert found["c"].code in COORDINATOR_MOVED and not found["c"].skipped and found["c"].error == "NotCoordinatorError"


def test_a_v7_answer_is_the_one_group_asked() -> None:
    answer = {"throttle_time_ms": 0, "error_code": 0, "topics": [{"name": "t", "partitions": [partition(3, 12)]}]}
    assert parse_answer(answer, ["g"]) == {"g": GroupOffsets("g", {("t", 3): 12})}


def test_a_group_asked_and_not_answered_is_unanswered_and_one_not_asked_is_dropped() -> None:
    answer = {"groups": [{"group_id": "stranger", "error_code": 0, "topics": []}]}
    found = parse_answer(answer, ["asked"])
    assert list(found) == ["asked"]
    assert found["asked"].code == UNANSWERED and not found["asked"].skipped and not found["asked"].offsets


def encoded(request: Any, version: int) -> dict[str, Any]:
    """The request as a broker of `version` decodes it."""
    return dict(type(request).decode(request.encode(version=version), version=version).to_dict())


def test_requests_ask_for_every_partition_or_the_named_ones_by_topic() -> None:
    with kafka_python_warnings():
        from kafka.protocol.consumer import OffsetFetchRequest

    wanted = {"a": None, "b": [("t", 2), ("t", 0), ("u", 1)]}
    batched = encoded(offset_fetch_request(OffsetFetchRequest, wanted, ["a", "b"], batched=True), 8)
    assert [(g["group_id"], g["topics"]) for g in batched["groups"]] == [
        ("a", None),
        ("b", [{"name": "t", "partition_indexes": [0, 2]}, {"name": "u", "partition_indexes": [1]}]),
    ]
    one = encoded(offset_fetch_request(OffsetFetchRequest, wanted, ["b"], batched=False), 7)
    assert one["group_id"] == "b" and [t["name"] for t in one["topics"]] == ["t", "u"]
    every = encoded(offset_fetch_request(OffsetFetchRequest, wanted, ["a"], batched=False), 2)
    assert every["group_id"] == "a" and every["topics"] is None
