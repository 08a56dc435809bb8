"""Debian's Burrow 1.2.1, with its own ZooKeeper, reads a real consumer group's lag from the 1-node 3.9 cluster.

This is the reference the lag evaluator is compared against, so the comparison stack itself must work.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Message

from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.services import BurrowFactory
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration


def commit_offsets(kafka39: KafkaHandle, topic: str, group: str, upto: int) -> None:
    """Consume `upto` records of partition 0 and commit synchronously, so the group has a known offset."""
    consumer = kafka39.consumer(group)
    consumer.subscribe([topic])
    seen: list[Message] = []

    def read_one() -> int:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(msg)
            if len(seen) == upto:
                consumer.commit(message=msg, asynchronous=False)
        return len(seen)

    try:
        poll(read_one, lambda n: n >= upto, 30, f"{upto} records read and committed", interval_s=0)
    finally:
        consumer.close()


def test_burrow_reports_a_real_groups_lag(kafka39: KafkaHandle, burrow_factory: BurrowFactory) -> None:
    topic = kafka39.create_topic("burrow", partitions=1, replication_factor=1)
    group = "burrow-ref"
    produce(kafka39, topic, 50, "x")
    commit_offsets(kafka39, topic, group, upto=20)  # also creates __consumer_offsets, which Burrow needs

    burrow = burrow_factory(kafka39.bootstrap_servers.split(","))

    def first_partition() -> dict[str, Any]:
        partitions = (burrow.group_lag("local", group).get("status") or {}).get("partitions") or []
        return partitions[0] if partitions else {}

    # Burrow needs a few offset refreshes before it has both the commit and the HWM; poll, then assert exactly.
    partition = poll(
        first_partition,
        lambda p: p.get("end", {}).get("offset") == 20 and p.get("current_lag") == 30,
        90,
        f"Burrow reporting group {group!r} at offset 20 with lag 30",
        interval_s=0.5,
    )
    assert partition["topic"] == topic
    assert partition["end"]["offset"] == 20
    assert partition["current_lag"] == 30, partition
    assert group in burrow.consumers("local")
