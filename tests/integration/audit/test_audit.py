"""The data-flow audit on the shared Kafka cluster (issue #26, points 1 and 2; docs/audit.md): an application sends
through `AuditedProducer` (one send fails for good), one group consumes everything through `ConsumerAudit` and
commits, another commits only part of one partition; the broker-side audit then reports each minute with the
counts computed by hand, and the client counts arrive too, all as SLI events on Kafka through the SLI sink. Record
timestamps are set minutes in the past, so every boundary is due at once and no test waits for a minute to end."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from audit import (
    BROKER_STREAM,
    CLIENT_STREAM,
    AuditedProducer,
    AuditReporter,
    BrokerAudit,
    ClientCounts,
    ClientOrigin,
    ConsumerAudit,
)
from audit.minutes import MINUTE_MS, minute_of
from pulse.polling import poll
from pulse.sli_sink import HEADER_SCHEMA, HEADER_VERSION, SliSink
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.integration.audit.conftest import read_stream

pytestmark = pytest.mark.integration

PER_MINUTE = {0: {0: 3, 1: 3}, 1: {0: 4}, 2: {1: 5}}
"""Minute (from the first) -> partition -> records written, by hand."""
TOO_LARGE = 2_500_000
"""A value the broker refuses (message.max.bytes ~1 MiB) though the producer accepts it: a failed send."""


def test_the_audit_counts_each_minute_of_each_group(kafka: KafkaHandle, sink: SliSink, sink_prefix: str) -> None:
    topic = kafka.create_topic("audit-orders", partitions=2)
    base = minute_of(int(time.time() * 1000)) - 5 * MINUTE_MS

    # The application: sends in event-time order per partition; one send fails for good.
    sent = ClientCounts()
    producer = AuditedProducer(kafka.producer(**{"message.max.bytes": 3 * TOO_LARGE}), sent)
    for minute, partitions in PER_MINUTE.items():
        for partition, count in partitions.items():
            for i in range(count):
                producer.produce(topic, b"order", partition=partition, timestamp=base + minute * MINUTE_MS + i)
    producer.produce(topic, os.urandom(TOO_LARGE), partition=1, timestamp=base + 2 * MINUTE_MS + 30_000)
    assert producer.flush(30) == 0

    # Group `billing` reads everything and commits; group `fraud` committed 3 records of partition 0 only.
    received = ClientCounts()
    consumer, audit = kafka.consumer("billing"), ConsumerAudit(received)
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    seen: list[Any] = []

    def more() -> int:
        for message in consumer.consume(100, timeout=0.5):
            audit.received(message)
            audit.processed(message)
            seen.append(message)
        return len(seen)

    poll(more, lambda n: n >= 15, 60, "15 orders consumed", interval_s=0)
    commit_offsets(consumer, [TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 8)])
    consumer.close()
    fraud = kafka.consumer("fraud")
    commit_offsets(fraud, [TopicPartition(topic, 0, 3)])
    fraud.close()

    reporters = [
        AuditReporter(sent, sink, ClientOrigin("dev", "orders", "producer")),
        AuditReporter(received, sink, ClientOrigin("dev", "billing", "consumer", "billing")),
    ]
    client_rows = sum(r.report() for r in reporters)

    broker = BrokerAudit(
        "dev", kafka.consumer("kp-audit"), kafka.admin(), kafka.group_offsets(), [topic], ["billing", "fraud"], sink,
        grace_s=1, max_wait_s=60, since_ms=base,
    )  # fmt: skip
    settled = broker.cycle(int(time.time() * 1000))
    again = broker.cycle(int(time.time() * 1000))
    assert not any(a.minute_ms < base + 3 * MINUTE_MS for a in again), "a minute settled twice"

    table, headers = read_stream(kafka, sink_prefix, BROKER_STREAM, len(settled) + len(again))
    assert {(h[HEADER_SCHEMA], h[HEADER_VERSION]) for h in headers} == {("audit-broker", "1")}
    rows = {(r["group"], (r["minute"].timestamp() * 1000 - base) // MINUTE_MS): r for r in table.to_pylist()}
    for minute, partitions in PER_MINUTE.items():
        done = rows[("billing", minute)]
        assert (done["records_written"], done["records_passed"], done["complete"]) == (
            sum(partitions.values()), sum(partitions.values()), True
        )  # fmt: skip
        assert done["latency_s"] is not None and done["latency_s"] >= 0
    behind = [rows[("fraud", m)] for m in PER_MINUTE]
    assert [(r["records_written"], r["records_passed"], r["complete"], r["latency_s"]) for r in behind] == [
        (6, 3, False, None), (4, 0, False, None), (5, 0, False, None)
    ]  # fmt: skip
    assert behind[0]["completeness"] == pytest.approx(0.5)
    assert all(r["records_written"] == 0 for (_g, m), r in rows.items() if m > 2)

    clients, _ = read_stream(kafka, sink_prefix, CLIENT_STREAM, client_rows)
    counted = {(r["role"], (r["minute"].timestamp() * 1000 - base) // MINUTE_MS): r for r in clients.to_pylist()}
    assert [(counted[("producer", m)]["sent"], counted[("producer", m)]["acknowledged"]) for m in PER_MINUTE] == [
        (6, 6), (4, 4), (6, 5)
    ]  # fmt: skip
    assert counted[("producer", 2)]["failed"] == 1
    assert [(counted[("consumer", m)]["received"], counted[("consumer", m)]["processed"]) for m in PER_MINUTE] == [
        (6, 6), (4, 4), (5, 5)
    ]  # fmt: skip
    assert {r["group"] for r in clients.to_pylist() if r["role"] == "consumer"} == {"billing"}
    assert all(r["latency_count"] == r["processed"] for r in clients.to_pylist() if r["role"] == "consumer")


class ListOffsetsCount:
    """A `stats_cb`: the ListOffsets requests one librdkafka consumer has sent, summed over its brokers."""

    def __init__(self) -> None:
        self.sent = self.emitted = 0

    def __call__(self, stats: str) -> None:
        brokers = json.loads(stats).get("brokers", {}).values()
        self.sent = sum(int((b.get("req") or {}).get("ListOffsets") or 0) for b in brokers)
        self.emitted += 1

    def now(self, consumer: Any) -> int:
        """The count of an emission made after this call (the consumer's poll serves the callback)."""
        target = self.emitted + 2
        poll(lambda: consumer.poll(0.1) or self.emitted, lambda _: self.emitted >= target, 30, "librdkafka stats")
        return self.sent


def test_a_cycle_reads_every_topic_in_one_listoffsets_round_per_boundary(kafka: KafkaHandle) -> None:
    """Twenty topics, four boundaries due: one round for the log ends and one per boundary, each a request per
    leader (3 brokers), so at most 15 requests; asked topic by topic it was 5 rounds per topic (300 requests)."""
    topics = [kafka.create_topic("audit-many", partitions=3) for _ in range(20)]
    base = minute_of(int(time.time() * 1000)) - 4 * MINUTE_MS
    producer = kafka.producer()
    for topic in topics:
        for partition in range(3):
            producer.produce(topic, b"x", partition=partition, timestamp=base + MINUTE_MS + partition)
    assert producer.flush(30) == 0

    counted = ListOffsetsCount()
    consumer = kafka.consumer("kp-audit-many", **{"statistics.interval.ms": 100, "stats_cb": counted})
    broker = BrokerAudit(
        "dev",
        consumer,
        kafka.admin(),
        kafka.group_offsets(),
        topics,
        ["nobody"],
        None,
        grace_s=1,
        max_wait_s=60,
        since_ms=base,
    )
    try:
        before = counted.now(consumer)
        now_ms = base + 3 * MINUTE_MS + 2_000  # boundaries base, base+1m, base+2m, base+3m are due: 4 rounds + ends
        settled = broker.cycle(now_ms)
        sent = counted.now(consumer) - before
    finally:
        broker.close()
    assert 0 < sent <= 5 * 3, f"{sent} ListOffsets requests for 20 topics"
    for topic in topics:
        assert broker.book.read_up_to(topic) == base + 3 * MINUTE_MS
    assert [(a.topic, a.written) for a in settled if a.minute_ms == base + MINUTE_MS] == [
        (topic, 3) for topic in topics
    ]
