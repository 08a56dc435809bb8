"""Mirror mode across two local clusters with a real MirrorMaker 2 between them (issue #4 point 6)."""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition

from pulse.dev.services import poll
from tests.fixtures.mirror import PARTITIONS, MirrorHandle

pytestmark = pytest.mark.integration


def test_mirrormaker_copies_each_record_to_the_same_partition_with_its_timestamp(mirror: MirrorHandle) -> None:
    """What mirror mode relies on: a copy keeps its partition and its source timestamp."""
    producer = mirror.source.producer()
    sent = {p: f"smoke-{p}".encode() for p in range(PARTITIONS)}
    for partition, value in sent.items():
        producer.produce(mirror.topic, value, partition=partition, timestamp=1_700_000_000_000 + partition)
    assert producer.flush(30) == 0
    consumer = mirror.target.consumer("smoke")
    consumer.assign([TopicPartition(mirror.mirrored_topic, p, 0) for p in range(PARTITIONS)])
    seen: dict[int, tuple[bytes, int]] = {}

    def read() -> dict[int, tuple[bytes, int]]:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None and msg.value() in sent.values():
            seen[msg.partition()] = (msg.value(), msg.timestamp()[1])
        return seen

    poll(read, lambda s: len(s) == PARTITIONS, 60, "a copy of every smoke record", interval_s=0)
    consumer.close()
    assert seen == {p: (sent[p], 1_700_000_000_000 + p) for p in range(PARTITIONS)}
