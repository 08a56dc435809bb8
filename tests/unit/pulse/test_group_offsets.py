"""OffsetFetch answers and requests of pulse/kafka/group_offsets.py, without a broker: answers as kafka-python
decodes them off the wire (v8+ names its groups, v2-v7 answer one at the top), requests as it encodes them."""

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


def response() -> Any:
    with kafka_python_warnings():
        from kafka.protocol.consumer import OffsetFetchResponse

    return OffsetFetchResponse


def decoded(answer: Any, version: int) -> Any:
    """`answer` as kafka-python decodes it off the wire at `version`."""
    return response().decode(answer.encode(version=version), version=version)


def v8_group(group: str, error: int, partitions: list[tuple[int, int, int]]) -> Any:
    """A v8 answer's group with topic `t`'s (partition, offset, error) rows."""
    kind = response().OffsetFetchResponseGroup
    row = kind.OffsetFetchResponseTopics.OffsetFetchResponsePartitions
    rows = [row(partition_index=i, committed_offset=o, committed_leader_epoch=-1, metadata="", error_code=e)
            for i, o, e in partitions]  # fmt: skip
    return kind(group_id=group, error_code=error, topics=[kind.OffsetFetchResponseTopics(name="t", partitions=rows)])


def test_a_v8_answer_reads_each_group_and_leaves_out_partitions_without_a_commit() -> None:
    groups = [v8_group("a", 0, [(0, 5, 0), (1, -1, 0), (2, 9, 3)]), v8_group("b", GROUP_ID_NOT_FOUND, []),
              v8_group("c", 16, [])]  # fmt: skip
    found = parse_answer(decoded(response()(version=8, throttle_time_ms=0, groups=groups), 8), ["a", "b", "c"])
    assert found["a"] == GroupOffsets("a", {("t", 0): 5})
    assert found["b"].skipped and found["b"].error == "GroupIdNotFoundError" and not found["b"].offsets
    assert found["c"].code in COORDINATOR_MOVED and not found["c"].skipped and found["c"].error == "NotCoordinatorError"


def test_a_v7_answer_is_the_one_group_asked() -> None:
    kind = response().OffsetFetchResponseTopic
    row = kind.OffsetFetchResponsePartition(
        partition_index=3, committed_offset=12, committed_leader_epoch=-1, metadata="", error_code=0
    )
    answer = response()(version=7, throttle_time_ms=0, error_code=0, topics=[kind(name="t", partitions=[row])])
    assert parse_answer(decoded(answer, 7), ["g"]) == {"g": GroupOffsets("g", {("t", 3): 12})}


def test_a_group_asked_and_not_answered_is_unanswered_and_one_not_asked_is_dropped() -> None:
    answer = response()(version=8, throttle_time_ms=0, groups=[v8_group("stranger", 0, [(0, 1, 0)])])
    found = parse_answer(decoded(answer, 8), ["asked"])
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
