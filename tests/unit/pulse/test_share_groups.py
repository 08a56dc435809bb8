"""The share-group answers parsed without a broker: lag missing stays None (never 0), errors name the group, bounds
hold, and our wire schemas encode and decode with kafka-python's protocol classes."""

from __future__ import annotations

from typing import Any

from pulse.kafka import share_groups
from pulse.kafka.share_groups import (
    MAX_NAME_CHARS,
    ShareMember,
    SharePartition,
    merge,
    parse_describe,
    parse_offsets,
)


def partition(index: int, start: int, lag: int | None = None, error: int = 0) -> dict[str, Any]:
    row: dict[str, Any] = {"partition_index": index, "start_offset": start, "leader_epoch": 0, "error_code": error}
    if lag is not None:
        row["lag"] = lag
    return row


def offsets_answer(*partitions: dict[str, Any], group: str = "g", error: int = 0) -> dict[str, Any]:
    topic = {"topic_name": "t", "topic_id": "x", "partitions": list(partitions)}
    return {"groups": [{"group_id": group, "topics": [topic], "error_code": error, "error_message": "boom"}]}


def test_lag_as_the_broker_computes_it() -> None:
    parsed = parse_offsets(offsets_answer(partition(1, 40, 7), partition(0, 10, 0)))
    assert parsed == {"g": ((SharePartition("t", 0, 10, 0), SharePartition("t", 1, 40, 7)), "")}


def test_missing_lag_stays_missing() -> None:
    """A v0 answer has no lag, -1 is "not known", and a partition without a start offset has no lag either."""
    parsed, _ = parse_offsets(offsets_answer(partition(0, 5), partition(1, 5, -1), partition(2, -1, 3)))["g"]
    assert [(p.start_offset, p.lag) for p in parsed] == [(5, None), (5, None), (None, None)]


def test_partition_and_group_errors_are_named() -> None:
    parsed, error = parse_offsets(offsets_answer(partition(0, 5, 1), partition(1, 5, 1, error=5)))["g"]
    assert [p.partition for p in parsed] == [0]  # the failed partition is unknown, not 0
    assert error == "offsets error 5 on t"
    assert parse_offsets(offsets_answer(error=16)) == {"g": ((), "offsets error 16: boom")}


def test_describe_counts_members_partitions() -> None:
    member = {
        "member_id": "m1", "client_id": "c", "client_host": "/10.0.0.1",
        "assignment": {"topic_partitions": [{"topic_name": "t", "partitions": [0, 1]}, {"partitions": [2]}]},
    }  # fmt: skip
    answer = {"groups": [{"group_id": "g", "group_state": "Stable", "members": [member], "error_code": 0}]}
    assert parse_describe(answer) == {"g": ("Stable", (ShareMember("m1", "c", "/10.0.0.1", 3),), "")}
    failed = {"groups": [{"group_id": "h", "error_code": 69, "error_message": "gone"}]}
    assert parse_describe(failed) == {"h": ("Unknown", (), "describe error 69: gone")}


def test_merge_names_what_is_missing() -> None:
    groups = merge(["a", "b"], {"a": ("Empty", (), "")}, {"b": ((), "")})
    assert [(g.group, g.state, g.error) for g in groups] == [
        ("a", "Empty", "no offsets answer"),
        ("b", "Unknown", "not described"),
    ]


def test_untrusted_names_and_sizes_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(share_groups, "MAX_PARTITIONS", 2)
    long = "x" * 1000
    answer = offsets_answer(partition(0, 1, 1), partition(1, 1, 1), partition(2, 1, 1), group=long)
    (key, (parts, error)), *_ = parse_offsets(answer).items()
    assert len(key) == MAX_NAME_CHARS and len(parts) == 2 and error == "past the 2-partition bound"


def test_our_schemas_round_trip_through_kafka_python() -> None:
    """The request encodes as the v1 wire layout, and a v1 answer decodes with its lag (v0 without)."""
    messages = share_groups._messages()
    group = messages.offsets_request.DescribeShareGroupOffsetsRequestGroup
    request = messages.offsets_request(groups=[group(group_id="g", topics=None)], version=1)
    assert request.encode().hex() == "020267000000"  # 1 group, "g", null topics, tagged fields
    response_class = messages.classes[0]
    topic_class = response_class.DescribeShareGroupOffsetsResponseGroup.DescribeShareGroupOffsetsResponseTopic
    part_class = topic_class.DescribeShareGroupOffsetsResponsePartition
    for version, lag in ((1, 9), (0, None)):
        part = part_class(partition_index=0, start_offset=3, leader_epoch=1, lag=9, error_code=0, version=version)
        topic = topic_class(topic_name="t", topic_id=None, partitions=[part], version=version)
        body = response_class.DescribeShareGroupOffsetsResponseGroup(
            group_id="g", topics=[topic], error_code=0, version=version
        )
        answer = response_class(throttle_time_ms=0, groups=[body], version=version)
        decoded = response_class.decode(answer.encode(), version=version)
        assert parse_offsets(decoded.to_dict())["g"][0] == (SharePartition("t", 0, 3, lag),)
