"""DescribeQuorum over our own codec (pulse/kafka/quorum_wire.py) against kafka-python's encoding of the same
messages: our request decodes as kafka-python's, and every version of the answer, encoded by kafka-python, reads as
its `describe_metadata_quorum` returns it, so `parse_quorum` (and the check's verdict) cannot tell them apart."""

from __future__ import annotations

import struct
import uuid
import warnings
from typing import Any

import pytest

from pulse.kafka.quorum import METADATA_TOPIC, QuorumUnread, answer_of, parse_quorum
from pulse.kafka.quorum_wire import (
    describe_quorum_request,
    parse_api_versions,
    parse_describe_quorum,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # kafka-python's schema loader (pulse/kafka/admin_client.py)
    from kafka import errors as kafka_errors
    from kafka.protocol.admin.cluster import DescribeQuorumRequest, DescribeQuorumResponse

Topic = DescribeQuorumResponse.TopicData
Partition = Topic.PartitionData
Replica = Partition.ReplicaState


def replica(node: int, end: int, caught_up_ms: int) -> Any:
    return Replica(
        replica_id=node,
        replica_directory_id=uuid.UUID(int=node),
        log_end_offset=end,
        last_fetch_timestamp=caught_up_ms,
        last_caught_up_timestamp=caught_up_ms,
    )


def answer(error_code: int = 0, partition_error: int = 0, message: str | None = None) -> Any:
    partition = Partition(
        partition_index=0,
        error_code=partition_error,
        error_message=message,
        leader_id=2,
        leader_epoch=7,
        high_watermark=1500,
        current_voters=[replica(1, 1500, 1_700_000_000_000), replica(2, 1500, 1_700_000_000_500)],
        observers=[replica(4, 1400, 1_699_999_999_000), replica(3, 1500, -1)],
    )
    return DescribeQuorumResponse(
        error_code=error_code,
        error_message=message,
        topics=[Topic(topic_name=METADATA_TOPIC, partitions=[partition])],
        nodes=[],
    )


def frame(response: Any, version: int, correlation_id: int = 2) -> bytes:
    """The answer as a broker sends it, less the size: response header v1 (correlation id, no tags), the body."""
    body: bytes = response.encode(version=version)
    return struct.pack(">i", correlation_id) + b"\x00" + body


def kafka_python_result(response: Any, version: int) -> dict[str, Any]:
    """What kafka-python's `describe_metadata_quorum` returns for the same bytes (its `_async_describe_quorum`, which
    before v2, where there is no error message, raises KeyError instead)."""
    decoded: dict[str, Any] = DescribeQuorumResponse.decode(response.encode(version=version), version=version).to_dict()
    for topic in decoded["topics"]:
        for partition in topic["partitions"]:
            error = kafka_errors.for_code(partition.pop("error_code"))(partition.pop("error_message", None))
            partition["error"] = None if isinstance(error, kafka_errors.NoError) else str(error)
    return decoded


@pytest.mark.parametrize("version", [0, 1, 2])
def test_the_kafka_python_path_reads_every_version_as_the_wire_does(version: int) -> None:
    """`describe_quorum` (SASL clusters, the collectors) decodes with kafka-python and shapes with `answer_of`: every
    version, v0-v1 included (brokers before 3.8), gives what `describe_metadata_quorum` gives at v2."""
    decoded = DescribeQuorumResponse.decode(answer().encode(version=version), version=version).to_dict()
    if version < 2:
        assert "error_message" not in decoded["topics"][0]["partitions"][0]  # where kafka-python's own call fails
    assert answer_of(decoded)["topics"] == kafka_python_result(answer(), version)["topics"]
    now_s = 1_700_000_001.0
    wire = parse_describe_quorum(frame(answer(), version), 2, version)
    assert parse_quorum(answer_of(decoded), now_s) == parse_quorum(wire, now_s)
    said = "denied" if version >= 2 else ""  # the top-level message is v2's
    with pytest.raises(QuorumUnread, match=rf"ClusterAuthorizationFailedError: .*{said}$"):
        refused = answer(error_code=31, message="denied")
        answer_of(DescribeQuorumResponse.decode(refused.encode(version=version), version=version).to_dict())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_the_request_is_kafka_pythons(version: int) -> None:
    request = describe_quorum_request(9, version)
    assert struct.unpack(">i", request[:4])[0] == len(request) - 4
    decoded = DescribeQuorumRequest.decode(request[4:], version=version, header=True)
    assert decoded.to_dict() == {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    assert decoded.header.correlation_id == 9


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_version_reads_as_kafka_python_reads_it(version: int) -> None:
    ours = parse_describe_quorum(frame(answer(), version), 2, version)
    theirs = kafka_python_result(answer(), version)
    now_s = 1_700_000_001.0
    assert parse_quorum(ours, now_s) == parse_quorum(theirs, now_s)
    keys = ("partition_index", "leader_id", "leader_epoch", "high_watermark", "error")
    assert {k: ours["topics"][0]["partitions"][0][k] for k in keys} == {
        k: theirs["topics"][0]["partitions"][0][k] for k in keys
    }
    state = parse_quorum(ours, now_s)
    assert (state.leader, state.epoch, state.observers) == (2, 7, (3, 4))
    if version >= 1:
        assert [v.caught_up_age_s for v in state.voters] == [1.0, 0.5]


def test_a_partition_error_is_worded_as_kafka_python_words_it() -> None:
    response = answer(partition_error=6, message="not the leader")
    ours = parse_describe_quorum(frame(response, 2), 2, 2)
    error = ours["topics"][0]["partitions"][0]["error"]
    assert error == kafka_python_result(response, 2)["topics"][0]["partitions"][0]["error"]
    assert "NotLeaderForPartitionError: not the leader" in error
    with pytest.raises(QuorumUnread, match="NotLeaderForPartition"):
        parse_quorum(ours, 0.0)


def test_a_top_level_refusal_names_the_error() -> None:
    with pytest.raises(QuorumUnread, match=r"ClusterAuthorizationFailedError: .*ClusterAuthorizationFailed"):
        parse_describe_quorum(frame(answer(error_code=31, message="denied"), 2), 2, 2)


def test_a_short_or_foreign_answer_is_a_value_error() -> None:
    whole = frame(answer(), 1)
    with pytest.raises(ValueError, match="answer ends"):
        parse_describe_quorum(whole[:-9], 2, 1)
    with pytest.raises(ValueError, match="correlation id"):
        parse_describe_quorum(whole, 3, 1)


def test_api_versions_lists_each_key_with_its_range() -> None:
    body = struct.pack(">ihi", 1, 0, 2) + struct.pack(">hhh", 18, 0, 4) + struct.pack(">hhh", 55, 0, 2)
    assert parse_api_versions(body, 1) == {18: (0, 4), 55: (0, 2)}
    with pytest.raises(ValueError, match="error code 35"):
        parse_api_versions(struct.pack(">ihi", 1, 35, 0), 1)
