"""Canary on the shared 3-node cluster.

Nothing here faults a broker, so the session's `kafka` fixture is used; each test has its own monitor topic.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import TopicPartition

from pulse.kafka.probe_payload import decode
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.integration.canary.canary_support import await_healthy, running_canary, sample

pytestmark = pytest.mark.integration

BROKERS = {1, 2, 3}


def test_healthy_cluster_every_broker_available_nothing_lost(kafka: KafkaHandle) -> None:
    """Healthy: availability 1.0 for every broker, latency histograms filled, nothing lost or duplicated. The
    closest-replica (KIP-392) probe, in rack az-a, reads every partition from broker 1 (az-a): from the leader for
    partition 0 and from a follower for the partitions brokers 2 and 3 lead, as librdkafka's statistics show."""
    with running_canary(kafka, client_rack="az-a", closest_replica_probe=True) as (canary, sink):
        await_healthy(canary, BROKERS)
        warm = datetime.now(UTC)  # a brand-new topic may time out its very first probe while leaders settle
        poll(
            lambda: {b: sum(1 for e in sink.events if e.broker == b and e.time >= warm) for b in BROKERS},
            lambda seen: all(count >= 10 for count in seen.values()),
            60,
            "10 probes sent after warm-up and settled, per broker",
        )
        poll(
            lambda: sample(canary, "kafka_pulse_canary_offset_commits_total", result="ok"),
            lambda n: n >= 3,
            30,
            "three offset commits",
        )
        for broker, rack in ((1, "az-a"), (2, "az-b"), (3, "az-c")):
            labels = {"broker": str(broker), "rack": rack, "client_rack": "az-a"}
            assert sample(canary, "kafka_pulse_canary_produce_latency_seconds_count", **labels) >= 10
            assert sample(canary, "kafka_pulse_canary_e2e_latency_seconds_count", replica="leader", **labels) >= 10
            assert sample(canary, "kafka_pulse_canary_broker_up", broker=str(broker)) == 1.0
            assert sample(canary, "kafka_pulse_canary_produce_availability", broker=str(broker)) == 1.0
        assert canary.availability() == {1: 1.0, 2: 1.0, 3: 1.0}
        partitions = canary.view.partitions()
        fetched_from = poll(
            lambda: {
                p: sample(canary, "kafka_pulse_canary_closest_replica_fetch_broker", partition=str(p))
                for p in partitions
            },
            lambda seen: all(broker == 1 for broker in seen.values()),
            60,
            "every partition fetched from broker 1, the replica in the canary's rack",
        )
        assert {canary.view.leader(p).broker for p in fetched_from} == {1, 2, 3}, "no partition read from a follower"
        closest = {"broker": "1", "rack": "az-a", "client_rack": "az-a", "replica": "closest"}
        assert sample(canary, "kafka_pulse_canary_e2e_latency_seconds_count", **closest) >= 10
    events = [e for e in sink.events if e.time >= warm]
    assert events, "no probe settled"
    assert [e for e in events if e.lost or e.duplicate or e.out_of_order or not e.produce_ok] == []
    assert all(e.consume_ok and e.e2e_latency_s is not None for e in events)
    assert {e.rack for e in events} == {"az-a", "az-b", "az-c"}


def test_loss_and_duplicates_on_the_cluster(kafka: KafkaHandle) -> None:
    """Loss: the canary's reader is held back on partition 0 (librdkafka pause, as a stuck consumer) while its
    producer keeps writing acknowledged probes there; DeleteRecords then removes them from the log before they are
    read, exactly as retention would. On resume the reader's position is out of range: every acknowledged probe
    in the deleted range must be reported lost, and no other.

    Duplicates: a second, real producer re-sends probes the canary already read, with the same key, producer id,
    partition and sequence, as a client retry or a mirror replay would; each must be reported duplicate.
    """
    with running_canary(kafka) as (canary, sink):
        await_healthy(canary, BROKERS)
        assert canary.consumer is not None
        topic = canary.config.topic
        reader = kafka.consumer(f"test-reader-{topic}")
        tp0 = TopicPartition(topic, 0)

        canary.consumer.pause([0])
        _, start = reader.get_watermark_offsets(tp0, timeout=10, cached=False)
        poll(
            lambda: reader.get_watermark_offsets(tp0, timeout=10, cached=False)[1],
            lambda hw: hw >= start + 5,
            30,
            "5 more acknowledged probes on partition 0",
        )
        low, end = reader.get_watermark_offsets(tp0, timeout=10, cached=False)
        reader.assign([TopicPartition(topic, 0, low)])
        in_log: list[int] = []
        while len(in_log) < end - low:
            message = reader.poll(10)
            assert message is not None and message.error() is None
            in_log.append(decode(message.value()).sequence)
        reader.close()
        # Everything below `end` goes; what the canary had not read yet (the pause drops prefetched records) is lost.
        read_before = {e.sequence for e in sink.events if e.partition == 0 and e.consume_ok}
        doomed = [seq for seq in in_log if seq not in read_before]
        assert len(doomed) >= 5
        admin = kafka.admin()
        deleted = admin.delete_records([TopicPartition(topic, 0, end)])
        for future in deleted.values():
            future.result(timeout=30)
        canary.consumer.resume([0])

        lost = poll(
            lambda: sorted(e.sequence for e in sink.events if e.lost and e.partition == 0),
            lambda seqs: len(seqs) >= len(doomed),
            30,
            f"sequences {doomed} reported lost",
        )
        assert lost == sorted(doomed)
        assert sample(canary, "kafka_pulse_canary_consumer_resets_total") == 1
        assert sample(canary, "kafka_pulse_canary_records_lost_total") == len(doomed)

        # Duplicates: re-send two probes of partition 1 that the canary already read.
        read = [e for e in sink.events if e.partition == 1 and e.consume_ok and not e.duplicate][:2]
        assert len(read) == 2
        copier = kafka.producer()
        key = canary.producer_id.encode()
        for event in read:
            value = {
                "v": 1,
                "id": canary.producer_id,
                "p": 1,
                "seq": event.sequence,
                "ts_ns": int(event.time.timestamp() * 1e9),
            }
            copier.produce(topic, key=key, value=json.dumps(value, separators=(",", ":")).encode(), partition=1)
        assert copier.flush(30) == 0
        dups = poll(
            lambda: sorted(e.sequence for e in sink.events if e.duplicate),
            lambda seqs: len(seqs) >= 2,
            30,
            "two duplicates",
        )
        assert dups == sorted(e.sequence for e in read)
        assert sample(canary, "kafka_pulse_canary_records_duplicated_total") == 2
        assert not any(e.out_of_order for e in sink.events)


def test_two_canaries_share_one_topic_and_each_tracks_only_its_own_probes(kafka: KafkaHandle) -> None:
    """Several instances on one monitor topic: each reads every record, skips the other's by
    producer id (counted as foreign), and reports none of them lost, duplicated or unknown; the topic stays put
    with both managing it."""
    topic = f"canary-shared-{uuid.uuid4().hex[:8]}"
    with (
        running_canary(kafka, topic=topic, client_rack="az-a") as (first, first_sink),
        running_canary(kafka, topic=topic, client_rack="az-c") as (second, second_sink),
    ):
        await_healthy(first, BROKERS)
        await_healthy(second, BROKERS)
        warm = datetime.now(UTC)
        assert first.consumer is not None and second.consumer is not None
        readers = (first.consumer, second.consumer)
        poll(
            lambda: [r.counts.foreign for r in readers],
            lambda foreign: all(n >= 20 for n in foreign),
            60,
            "20 records of the other instance skipped by each reader",
        )
        poll(
            lambda: [sum(1 for e in s.events if e.time >= warm and e.consume_ok) for s in (first_sink, second_sink)],
            lambda read: all(n >= 20 for n in read),
            60,
            "20 own probes read back by each instance",
        )
        assert first.producer_id != second.producer_id
        for canary, sink in ((first, first_sink), (second, second_sink)):
            events = [e for e in sink.events if e.time >= warm]
            assert {e.producer_id for e in events} == {canary.producer_id}
            assert [e for e in events if e.lost or e.duplicate or e.out_of_order] == []
            assert sample(canary, "kafka_pulse_canary_records_unknown_total") == 0
        created = [sample(c, "kafka_pulse_canary_topic_changes_total", action="create") for c in (first, second)]
        assert sum(created) == 1, f"the shared topic was created {created} times"
        moved = [sample(c, "kafka_pulse_canary_topic_changes_total", action="reassign") for c in (first, second)]
        assert sum(moved) == 0, f"two instances fought over the placement: {moved}"


def test_a_hostile_record_is_malformed_and_the_rest_of_its_batch_is_read(kafka: KafkaHandle) -> None:
    """Records under the canary's own key whose values are `[[[[...` (deep enough to exhaust the JSON parser's
    recursion, and far past the size bound) sit in one batch with good probes: each is counted malformed, and
    every probe after them in that batch is read, none reported lost. The reader is held back on partition 0
    while they are written, so that one fetch returns them together."""
    with running_canary(kafka, loss_deadline_s=30.0) as (canary, sink):
        await_healthy(canary, BROKERS)
        assert canary.consumer is not None
        topic = canary.config.topic
        reader = kafka.consumer(f"test-reader-{topic}")
        tp0 = TopicPartition(topic, 0)
        canary.consumer.pause([0])
        writer = kafka.producer()
        key = canary.producer_id.encode()
        for value in (b"[" * 1020, b"[" * 100_000):
            writer.produce(topic, key=key, value=value, partition=0)
        assert writer.flush(30) == 0
        _, after_hostile = reader.get_watermark_offsets(tp0, timeout=10, cached=False)
        poll(
            lambda: reader.get_watermark_offsets(tp0, timeout=10, cached=False)[1],
            lambda hw: hw >= after_hostile + 3,
            30,
            "3 probes written on partition 0 after the hostile records",
        )
        reader.assign([TopicPartition(topic, 0, after_hostile)])
        behind: list[int] = []
        while len(behind) < 3:
            message = reader.poll(10)
            assert message is not None and message.error() is None
            behind.append(decode(message.value()).sequence)
        reader.close()
        canary.consumer.resume([0])
        poll(
            lambda: canary.consumer.counts.malformed if canary.consumer is not None else 0,
            lambda n: n >= 2,
            30,
            "the two hostile records counted malformed",
        )
        poll(
            lambda: {e.sequence for e in sink.events if e.partition == 0 and e.consume_ok},
            lambda read: set(behind) <= read,
            30,
            f"probes {behind}, written behind the hostile records, read",
        )
        assert canary.consumer.counts.malformed == 2
        assert sample(canary, "kafka_pulse_canary_records_malformed_total") == 2
        assert [e for e in sink.events if e.lost] == []
        assert sample(canary, "kafka_pulse_canary_records_lost_total") == 0
