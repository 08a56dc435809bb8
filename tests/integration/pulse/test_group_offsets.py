"""Committed offsets through pulse/kafka/group_offsets.py on the real 4.x dev cluster: what a group committed, by
group and by partition, and the same read right after the group's coordinator moved to another broker. That move
is what killed a lag process through librdkafka's ListConsumerGroupOffsets (SIGSEGV on NOT_COORDINATOR,
confluentinc/librdkafka#5040); here the old coordinator's NOT_COORDINATOR sends the read to the new one, in the same
call."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import ElectionType, TopicPartition

from pulse.kafka.group_offsets import UNANSWERED, GroupOffsets, GroupOffsetsReader
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets

pytestmark = pytest.mark.integration

OFFSETS_TOPIC = "__consumer_offsets"


def java_partition(group: str, partitions: int) -> int:
    """The `__consumer_offsets` partition Kafka keeps `group` in: Utils.abs(String.hashCode) % partitions."""
    h = 0
    for unit in group.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


def cached_coordinator(reader: GroupOffsetsReader, group: str) -> object:
    from kafka.protocol.metadata.find_coordinator import CoordinatorType

    return reader.client.get()._manager.cluster.get_coordinator(group, CoordinatorType.GROUP)


def replicas_and_leader(kafka: KafkaHandle, partition: int) -> tuple[list[int], int]:
    meta = kafka.admin().list_topics(OFFSETS_TOPIC, timeout=15).topics[OFFSETS_TOPIC].partitions[partition]
    return list(meta.replicas), int(meta.leader)


def lead_with(kafka: KafkaHandle, partition: int, replicas: list[int]) -> None:
    """`replicas` in this order for the partition (the same set), then a preferred election: its first leads."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KafkaTopicPartition

    tools = KafkaAdminClient(**kafka.kafka_python_config(30.0))
    try:
        errors = tools.alter_partition_reassignments({KafkaTopicPartition(OFFSETS_TOPIC, partition): replicas})
        assert not any(errors.values()), errors
        poll(lambda: replicas_and_leader(kafka, partition)[0], lambda r: r == replicas, 60, "the reassignment")
    finally:
        tools.close()
    tp, admin = TopicPartition(OFFSETS_TOPIC, partition), kafka.admin()

    def elect() -> int:
        leader = replicas_and_leader(kafka, partition)[1]
        if leader != replicas[0]:
            admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=15)  # a partition's error: poll again
        return leader

    poll(elect, lambda leader: leader == replicas[0], 60, f"broker {replicas[0]} leading {OFFSETS_TOPIC}-{partition}")


def commit(kafka: KafkaHandle, group: str, offsets: list[TopicPartition]) -> None:
    """`group` commits `offsets` through a consumer that then leaves."""
    committer = kafka.consumer(group)
    commit_offsets(committer, offsets)
    committer.close()


@pytest.fixture()
def reader(kafka: KafkaHandle) -> Iterator[GroupOffsetsReader]:
    made = GroupOffsetsReader(kafka.kafka_python_config())
    yield made
    made.close()


def test_a_group_reads_what_it_committed_by_group_and_by_partition(
    kafka: KafkaHandle, reader: GroupOffsetsReader
) -> None:
    topic = kafka.create_topic("goff", partitions=3)
    group = f"goff-{uuid.uuid4().hex[:8]}"
    commit(kafka, group, [TopicPartition(topic, 0, 7), TopicPartition(topic, 2, 11)])

    never = f"goff-never-{uuid.uuid4().hex[:8]}"
    found = reader.read({group: None, never: None})
    assert found[group] == GroupOffsets(group, {(topic, 0): 7, (topic, 2): 11})
    assert found[never] == GroupOffsets(never, {})  # nothing committed: no error, no offsets
    # Partitions asked by name: one committed, one not (absent, never a zero).
    assert reader.read({group: [(topic, 2), (topic, 1)]})[group].offsets == {(topic, 2): 11}


def test_a_read_right_after_the_coordinator_moved_asks_the_new_one(
    kafka: KafkaHandle, reader: GroupOffsetsReader
) -> None:
    topic = kafka.create_topic("goff-move", partitions=1)
    group = f"goff-move-{uuid.uuid4().hex[:8]}"
    commit(kafka, group, [TopicPartition(topic, 0, 42)])
    want = GroupOffsets(group, {(topic, 0): 42})
    assert reader.read({group: None})[group] == want
    old = cached_coordinator(reader, group)

    partitions = len(kafka.admin().list_topics(OFFSETS_TOPIC, timeout=15).topics[OFFSETS_TOPIC].partitions)
    partition = java_partition(group, partitions)
    replicas, leader = replicas_and_leader(kafka, partition)
    assert leader == old, f"the group's partition {partition} is led by {leader}, its coordinator is {old}"
    assert len(replicas) > 1, "the dev cluster replicates __consumer_offsets"
    new_leader = next(r for r in replicas if r != old)
    moved = [new_leader] + [r for r in replicas if r != new_leader]
    try:
        lead_with(kafka, partition, moved)
        # The new coordinator has loaded the group once a fresh client reads it there.
        fresh = GroupOffsetsReader(kafka.kafka_python_config())
        try:
            poll(lambda: fresh.read({group: None})[group], lambda r: r == want, 60, "the group on its new coordinator")
            assert cached_coordinator(fresh, group) == new_leader
        finally:
            fresh.close()

        # The kept reader still holds the old coordinator, which now answers NOT_COORDINATOR: one read, no error.
        assert cached_coordinator(reader, group) == old
        assert reader.read({group: None})[group] == want
        assert cached_coordinator(reader, group) == new_leader
    finally:
        lead_with(kafka, partition, replicas)  # heal: the shared cluster's preferred leaders as they were


def test_a_hung_coordinator_leaves_its_groups_unanswered_and_the_others_read(kafka: KafkaHandle) -> None:
    """Its groups are UNANSWERED with the request's error once the request timeout passes, never read as empty;
    groups on the other coordinators are read in the same call (every coordinator is asked before any answer)."""
    topic = kafka.create_topic("goff-hung", partitions=1)
    partitions = len(kafka.admin().list_topics(OFFSETS_TOPIC, timeout=15).topics[OFFSETS_TOPIC].partitions)
    leaders: dict[int, str] = {}
    for _ in range(200):
        group = f"goff-hung-{uuid.uuid4().hex[:8]}"
        leaders.setdefault(replicas_and_leader(kafka, java_partition(group, partitions))[1], group)
        if len(leaders) == 2:
            break
    (hung, hung_group), (_, live_group) = sorted(leaders.items())
    for group in leaders.values():
        commit(kafka, group, [TopicPartition(topic, 0, 5)])
    reader = GroupOffsetsReader(kafka.kafka_python_config(3.0))
    try:
        assert all(r.code == 0 for r in reader.read(dict.fromkeys(leaders.values())).values())  # coordinators known
        kafka.cluster.pause(hung)
        try:
            found = reader.read(dict.fromkeys(leaders.values()))
        finally:
            kafka.cluster.resume(hung)
        assert found[live_group] == GroupOffsets(live_group, {(topic, 0): 5})
        assert found[hung_group].code == UNANSWERED and not found[hung_group].offsets
        assert "Timeout" in found[hung_group].error or "Timed" in found[hung_group].error, found[hung_group].error
        # Its coordinator is looked up again on the next read, which reads it once the broker answers.
        poll(lambda: reader.read({hung_group: None})[hung_group], lambda r: r.code == 0, 60, "the resumed coordinator")
    finally:
        reader.close()
