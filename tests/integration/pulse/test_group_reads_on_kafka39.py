"""Where Kafka 3.9.2 differs (#24 point 6): it has no share groups (KIP-932) nor streams groups (KIP-1071), so the
readers kafka-pulse uses on 4.x list none there and, asked for a group by name, say why instead of reporting a
group with no lag; a classic group on the same cluster is left out of both."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import TopicPartition

from kafka_pulse.clusters import dev_cluster_config
from pulse.kafka.share_groups import ShareGroupReader
from pulse.kafka.streams_groups import StreamsGroupReader
from pulse.profile import kafka_python_config
from tests.fixtures.kafka import KafkaHandle, commit_offsets

pytestmark = pytest.mark.integration


def test_share_and_streams_reads_on_kafka_39_list_nothing_and_say_why_for_a_named_group(kafka39: KafkaHandle) -> None:
    topic = kafka39.create_topic("reads39", partitions=1, replication_factor=1)
    group = f"classic39-{uuid.uuid4().hex[:6]}"
    member = kafka39.consumer(group)
    try:
        commit_offsets(member, [TopicPartition(topic, 0, 0)])  # a group that is there, of the classic type
    finally:
        member.close()
    settings = kafka_python_config(dev_cluster_config(kafka39.cluster), "reads39", 10.0)
    share, streams = ShareGroupReader(settings), StreamsGroupReader(settings)
    try:
        listed_share, listed_streams = share.read(), streams.read()
        named_share, named_streams = share.read([group]), streams.read([group])
    finally:
        share.close()
        streams.close()
    assert listed_share.groups == () and listed_streams.groups == ()  # the classic group is neither
    assert named_share.groups == () and named_streams.groups == ()  # never a group with an empty, "0 lag" read
    assert named_share.reason == "share groups not supported (Kafka before 4.1, or share.version=0)"
    assert named_streams.reason == "streams groups not supported (Kafka before 4.1, or streams.version=0)"
