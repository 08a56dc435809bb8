"""The SLI sink on a real Kafka cluster (pulse/sli_sink/; docs/sli-log.md, "Kafka sink"): events arrive in order
with their schema; while the cluster is down (its one broker killed -9) they wait on disk, through a graceful stop
and a crashed process, and once it is back they are all delivered, in order, each exactly once; a full spool drops
its oldest events and counts them; `offer` returns while a delivery round waits on the dead cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from devstack.topology import Security
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.sli_sink import (
    HEADER_SCHEMA,
    HEADER_SEQ,
    HEADER_SOURCE,
    HEADER_VERSION,
    KafkaDelivery,
    SliSink,
    SliSinkStats,
    decode_rows,
    header_map,
)
from tests.fixtures.kafka import KAFKA_VERSION, KafkaHandle, _start
from tests.support.sli_rows import rows, stream

pytestmark = pytest.mark.integration

TIMEOUT_S = 3.0
"""librdkafka's message timeout here: a round against the dead broker fails after this long."""


@pytest.fixture(scope="module")
def lone_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 1-node cluster of this module's own: killing its broker takes the whole cluster away."""
    yield from _start(tmp_path_factory.mktemp("kafka-sli"), 1, KAFKA_VERSION, Security.PLAINTEXT, "kafka-sli")


def make_sink(kafka: KafkaHandle, spool: Path, timeout_s: float = TIMEOUT_S, **options: Any) -> SliSink:
    delivery = KafkaDelivery(kafka.client_config(), "", timeout_s)
    return SliSink(spool, delivery, retry_after_s=0.5, spool_interval_s=0.05, **options)


def await_stats(
    sink: SliSink, accept: Callable[[SliSinkStats], bool], what: str, timeout_s: float = 60
) -> SliSinkStats:
    return poll(sink.stats, accept, timeout_s, what, interval_s=0.05)


def queued(count: int, stats: SliSinkStats) -> bool:
    return stats.queued == count


def read_topic(kafka: KafkaHandle, topic: str, count: int) -> list[Any]:
    """The first `count` records of the topic's only partition, from the beginning."""
    consumer = kafka.consumer(f"reader-{topic}")
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[Any] = []

    def more() -> int:
        for record in consumer.consume(500, timeout=0.5):
            assert record.error() is None, record.error()
            records.append(record)
        return len(records)

    try:
        poll(more, lambda n: n >= count, 120, f"{count} records on {topic}", interval_s=0)
        more()  # anything past `count` is a duplicate, and fails the caller's comparison
    finally:
        consumer.close()
    return records


def numbers_of(topic: str, records: list[Any]) -> list[int]:
    numbers: list[int] = decode_rows(stream(topic), [r.value() for r in records]).column("sequence").to_pylist()
    return numbers


def test_events_arrive_in_order_with_their_schema(lone_kafka: KafkaHandle, tmp_path: Path) -> None:
    kafka = lone_kafka
    topic = kafka.create_topic("sli-order", partitions=1)
    sink = make_sink(kafka, tmp_path).start()
    try:
        for first in range(0, 200, 20):
            assert sink.offer(stream(topic), rows(range(first, first + 20)))
        await_stats(sink, lambda s: s.delivered == 200, "200 events delivered")
    finally:
        sink.stop()
    records = read_topic(kafka, topic, 200)
    assert decode_rows(stream(topic), [r.value() for r in records]).equals(rows(range(200)))
    headers = [header_map(r.headers()) for r in records]
    assert {(h[HEADER_SCHEMA], h[HEADER_VERSION], h[HEADER_SOURCE]) for h in headers} == {(topic, "1", sink.source)}
    assert [int(h[HEADER_SEQ]) for h in headers] == list(range(200))
    assert {r.key() for r in records} == {b"sli-test"}
    stats = sink.stats()
    assert stats.queued == 200 and stats.spool_events == 0 and sum(stats.dropped.values()) == 0


def test_cluster_down_events_wait_on_disk_through_restarts(lone_kafka: KafkaHandle, tmp_path: Path) -> None:
    kafka = lone_kafka
    node = kafka.cluster.spec.nodes[0].node_id
    topic = kafka.create_topic("sli-outage", partitions=1)
    small_topic = kafka.create_topic("sli-small", partitions=1)
    spool = tmp_path / "spool"
    sinks: list[SliSink] = []
    try:
        first = make_sink(kafka, spool, timeout_s=10.0).start()  # a long round: offer is called inside it
        first.offer(stream(topic), rows(range(10)))
        await_stats(first, lambda s: s.delivered == 10, "10 delivered while the cluster is up")

        kafka.cluster.kill(node)
        try:
            first.offer(stream(topic), rows(range(10, 20)))
            waiting = await_stats(first, lambda s: s.in_round and s.queued == 20, "a round waiting on the dead cluster")
            assert first.offer(stream(topic), rows(range(20, 25)))  # the probe loop's call, during that round
            after = first.stats()
            assert after.in_round and after.rounds == waiting.rounds, "offer returned while the round still waited"
            await_stats(first, lambda s: s.delivery_errors >= 1 and s.queued == 25, "the round failed, all spooled")
            first.stop(grace_s=0)  # a graceful stop with the cluster away: nothing delivered, all kept
            assert first.stats().spool_events == 15

            # The next process spools 10 more and is killed -9: its events must survive the crash.
            ready = tmp_path / "ready"
            child = subprocess.Popen(
                [sys.executable, "-m", "tests.support.sli_sink_child", str(spool), kafka.bootstrap_servers, topic,
                 "25", "10", str(ready)],
                env={**os.environ, "PYTHONPATH": os.getcwd()},
            )  # fmt: skip
            try:
                poll(ready.exists, bool, 60, "the child's events spooled", interval_s=0.05)
            finally:
                child.send_signal(signal.SIGKILL)
                child.wait(30)

            # A small spool on the dead cluster: past its bound the oldest go, counted.
            small = make_sink(kafka, tmp_path / "small", spool_max_bytes=4096).start()
            sinks.append(small)
            for n in range(40):
                small.offer(stream(small_topic), rows([n]))
                await_stats(small, partial(queued, n + 1), f"small event {n} spooled")
            kept = small.stats().spool_events
            assert small.stats().dropped["spool_full"] == 40 - kept > 0

            restarted = make_sink(kafka, spool).start()
            sinks.append(restarted)
            restarted.offer(stream(topic), rows(range(35, 40)))
            await_stats(restarted, lambda s: s.queued == 5 and s.spool_events == 30, "30 waiting after restarts")
        finally:
            kafka.cluster.restart(node, cache_dir())
        await_stats(restarted, lambda s: s.delivered == 30 and s.spool_events == 0, "all delivered", 180)
        await_stats(small, lambda s: s.delivered == kept and s.spool_events == 0, "the small spool delivered", 180)
    finally:
        for sink in sinks:
            sink.stop()

    records = read_topic(kafka, topic, 40)
    assert numbers_of(topic, records) == list(range(40)), "every event once, in order"
    identities = [(header_map(r.headers())[HEADER_SOURCE], header_map(r.headers())[HEADER_SEQ]) for r in records]
    assert len(set(identities)) == 40
    small_records = read_topic(kafka, small_topic, kept)
    assert numbers_of(small_topic, small_records) == list(range(40 - kept, 40)), "the newest kept, in order"
