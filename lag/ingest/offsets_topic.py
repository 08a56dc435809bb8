"""The `__consumer_offsets` loop: the internal topic consumed from the start (commit timestamps from the broker),
each batch decoded outside the service lock and applied to the store in chunks. Groups are judged only once the
backlog is read. Kafka errors are caught here and turn the commits feed unknown, never a verdict.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from lag.ingest.admin_clients import request_timeout_s
from lag.ingest.coordinator_records import (
    ConsumerGroupAssignment,
    ConsumerGroupAssignmentTombstone,
    ConsumerGroupMember,
    ConsumerGroupMemberLeft,
    ConsumerGroupTombstone,
    ShareGroupMetadata,
    ShareGroupTombstone,
)
from lag.ingest.members import ConsumerGroupMembers
from lag.ingest.records import (
    CommitFields,
    GroupMetadata,
    GroupTombstone,
    OffsetCommit,
    OffsetTombstone,
    Record,
    commit_fields,
    decode_record_general,
)
from lag.store.access import LagWriter
from lag.store.freshness import SourceHealth
from lag.store.offsets import OffsetStore
from pulse.kafka.offsets import read_offsets

_LOG = logging.getLogger(__name__)
OFFSETS_TOPIC = "__consumer_offsets"
COMMITS_FEED = OFFSETS_TOPIC
"""The health feed of the `__consumer_offsets` reader: without fresh commits, groups would look stopped."""
INGEST_CHUNK = 1000
"""Records applied per hold of the service lock: about 4 ms of work, so a status request waits no longer
(docs/benchmarks.md, status while ingesting)."""
_MEMBER_RECORDS = (
    ConsumerGroupMember,
    ConsumerGroupMemberLeft,
    ConsumerGroupAssignment,
    ConsumerGroupAssignmentTombstone,
)

CONSUME_RECORDS = INGEST_CHUNK
"""Records taken per consume: what one hold of the lock applies. A consume's messages (each an object with its key's
and value's bytes, then a decoded tuple) are the reader's largest transient, and not all of a batch's peak is given
back: at 10,000 a consume, `kafka-pulse lag` at 5,000 commits/s stayed 3-4 MB larger in a harness, for no CPU saved
(docs/benchmarks.md)."""

READER_QUEUES = {
    "queued.max.messages.kbytes": 4096,
    "queued.min.messages": 10_000,
    "fetch.max.bytes": 4 << 20,
    "fetch.min.bytes": 64 << 10,
}
"""librdkafka's prefetch sized for what the reader takes at a time (consumes of about 100 B records): with
the defaults (64 MiB queued, 100,000 records a partition, 50 MiB fetches) a backlog read at start could queue up to
64 MiB ahead of the decoding; 4 MiB is dozens of consumes' worth. A fetch waits for 64 KiB or `fetch.wait.max.ms`
(500 ms): with the default of one byte, a steady stream of commits is read in many small fetches, each naming every
`__consumer_offsets` partition, and their handling cost as much as the decoding (docs/kafka-clients.md)."""

CATCH_UP_GIVE_UP_S = 600.0
"""A reader still short of the backlog's end after this long is taken as caught up (logged with the partitions):
a partition whose only records a consumer never sees cannot hold its cluster unknown for ever."""


def unread_partitions(ends: dict[int, int], starts: dict[int, int], positions: dict[int, int]) -> list[int]:
    """`__consumer_offsets` partitions whose backlog, up to `ends` (the HWMs when the reader started), is not read
    yet (pure). Empty partitions (start >= end) are read; a position is the consumer's, which moves past control
    records too."""
    return sorted(p for p, end in ends.items() if starts.get(p, 0) < end and positions.get(p, -1) < end)


class OffsetsTopicReader:
    """One cluster's `__consumer_offsets` reader: commits, tombstones and group metadata into the store."""

    def __init__(self, cluster: str, client_config: dict[str, Any], service: LagWriter, health: SourceHealth) -> None:
        self.cluster = cluster
        self.client_config = dict(client_config)
        self.service = service
        self.health = health
        self.decoded: Counter[str] = Counter()
        """Records read from __consumer_offsets by decoded kind (OffsetCommit, Undecodable, UnknownRecord, ...)."""
        service.count_records(cluster, self.decoded)
        self.members = ConsumerGroupMembers()
        """Consumer-protocol (KIP-848) groups' members and assignments, from `__consumer_offsets`."""
        self.topic_names: dict[bytes, str] = {}
        """Topic id -> name, read (DescribeTopics, by the HWM rounds) only while a consumer-protocol assignment
        names an unknown id."""
        self._unresolved: set[str] = set()
        """Consumer-protocol groups whose assignment names a topic id not in `topic_names` yet."""

    def run(self, stop: threading.Event) -> None:
        """Reads `__consumer_offsets` until `stop` is set. Its health is a feed of its own: error records mark it, a
        clean read refreshes it, and a crash stops it, so its groups turn unknown instead of looking stopped."""
        try:
            self._read_offsets(stop)
        except Exception as exc:  # a bug or a client failure must not leave its groups judged on old commits
            _LOG.exception("lag source %s: the %s reader stopped", self.cluster, OFFSETS_TOPIC)
            self.health.mark_stopped(self.cluster, f"{type(exc).__name__}: {exc}", COMMITS_FEED)

    def wants_topic_ids(self) -> bool:
        """True while a consumer-protocol assignment names a topic id not known yet."""
        return bool(self._unresolved)

    def resolve_topic_ids(self, names: dict[bytes, str]) -> None:
        """The topic ids the HWM round read: the groups waiting for them get their owners."""
        self.topic_names = names
        with self.service.locked() as store:
            for group in sorted(self._unresolved):
                self._apply_members(store, group)

    def _read_offsets(self, stop: threading.Event) -> None:
        config = {
            **self.client_config,
            "group.id": f"kafka-pulse-lag-{uuid.uuid4().hex[:8]}",  # never joined or committed: we assign()
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **READER_QUEUES,
        }
        consumer = Consumer(config)
        try:
            while not stop.is_set():
                consumer.poll(0)  # serves librdkafka's log lines while no partition is assigned yet
                try:
                    md = consumer.list_topics(OFFSETS_TOPIC, timeout=5).topics.get(OFFSETS_TOPIC)
                except KafkaException as exc:
                    self.health.mark_error(self.cluster, f"listing {OFFSETS_TOPIC}: {exc}", COMMITS_FEED)
                    stop.wait(1.0)
                    continue
                if md is not None and md.error is None and md.partitions:
                    partitions = sorted(md.partitions)
                    consumer.assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
                    break
                self.health.mark_ok(self.cluster, COMMITS_FEED)  # no group has committed yet: nothing is missed
                stop.wait(1.0)
            else:
                return
            # Groups are judged only once the backlog is read: judged half-way, a group that keeps up would look
            # stopped on its old commits (Burrow #459, #740: minutes to half an hour of false verdicts at start).
            backlog: tuple[dict[int, int], dict[int, int]] | None = None
            caught_up, started = False, time.monotonic()
            refused: KafkaError | None = None
            """A refusal to read (TOPIC_AUTHORIZATION_FAILED: no Read ACL on the topic): librdkafka reports it once
            in a while, not at every consume, so it stays the reason until records come; other errors pass."""
            while not stop.is_set():
                messages = consumer.consume(num_messages=CONSUME_RECORDS, timeout=0.5)
                errors = [e for m in messages if (e := m.error()) is not None]
                if errors:
                    self.ingest([(m.key(), m.value()) for m in messages if m.error() is None])
                elif messages:
                    self.ingest([(m.key(), m.value()) for m in messages])
                if len(messages) > len(errors):
                    refused = None
                refused = next((e for e in errors if e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED), refused)
                if not caught_up:
                    backlog = backlog or self._offsets_extent(consumer, partitions)
                    caught_up = self._caught_up(consumer, backlog, time.monotonic() - started)
                if errors or refused is not None:
                    self.health.mark_error(
                        self.cluster, f"reading {OFFSETS_TOPIC}: {refused or errors[0]}", COMMITS_FEED
                    )
                elif caught_up:
                    self.health.mark_ok(self.cluster, COMMITS_FEED)
        finally:
            consumer.close()

    def _offsets_extent(
        self, consumer: Consumer, partitions: list[int]
    ) -> tuple[dict[int, int], dict[int, int]] | None:
        """(ends, starts) of `__consumer_offsets` now, asked by the reader's own consumer (so up to what it can read);
        None while they cannot be read."""
        tps = [(OFFSETS_TOPIC, p) for p in partitions]
        timeout = request_timeout_s(len(tps))
        try:
            extent = []
            for spec in (OFFSET_END, OFFSET_BEGINNING):
                extent.append({p: offset for (_, p), offset in read_offsets(consumer, tps, spec, timeout).items()})
        except Exception as exc:  # any failure: still not known to be caught up, asked again next round
            self.health.mark_error(self.cluster, f"{OFFSETS_TOPIC} extent: {type(exc).__name__}: {exc}", COMMITS_FEED)
            return None
        return extent[0], extent[1]

    def _caught_up(
        self, consumer: Consumer, backlog: tuple[dict[int, int], dict[int, int]] | None, waited_s: float
    ) -> bool:
        if backlog is None:
            return False
        ends, starts = backlog
        positions = {
            tp.partition: tp.offset for tp in consumer.position([TopicPartition(OFFSETS_TOPIC, p) for p in ends])
        }
        late = unread_partitions(ends, starts, positions)
        if late and waited_s > CATCH_UP_GIVE_UP_S:
            _LOG.warning(
                "lag source %s: %s partitions %s still short of their end after %.0f s; judging anyway",
                self.cluster,
                OFFSETS_TOPIC,
                late,
                waited_s,
            )
            return True
        if late:
            self.health.mark_error(
                self.cluster, f"reading the {OFFSETS_TOPIC} backlog: {len(late)} partitions to go", COMMITS_FEED
            )
        return not late

    def ingest(self, records: list[tuple[bytes | None, bytes | None]]) -> None:
        """Decode a batch of `__consumer_offsets` records, then apply it `INGEST_CHUNK` records per hold of the
        service lock, letting the threads that wait for it in between, so a status request or scrape waits for at
        most one chunk, not a whole poll."""
        # pure, no lock needed; an offset commit of the usual shape stays a plain tuple (records.py says why)
        decoded = [commit_fields(key, value) or decode_record_general(key, value) for key, value in records]
        for at in range(0, len(decoded), INGEST_CHUNK):
            self.service.let_readers_in()  # else a request woken on the other core can lose every chunk to us
            with self.service.locked() as store:
                self._apply(store, decoded[at : at + INGEST_CHUNK])

    def _apply(self, store: OffsetStore, records: list[CommitFields | Record]) -> None:
        """Apply decoded records in order (under the lock); member records' owners once at the end."""
        now = self.service.clock_ms()
        c = self.cluster
        changed: set[str] = set()
        add_commit = store.add_commit
        commits = 0
        for record in records:
            if type(record) is tuple:  # an offset commit's fields: nearly every record
                commits += 1
                add_commit(c, *record, now)
                continue
            kind = type(record).__name__
            self.decoded[kind] = self.decoded.get(kind, 0) + 1
            if isinstance(record, OffsetCommit):
                store.add_commit(
                    c, record.group, record.topic, record.partition, record.offset, record.commit_timestamp_ms, now
                )
            elif isinstance(record, OffsetTombstone):
                store.clear_partition(c, record.group, record.topic, record.partition)
            elif isinstance(record, GroupTombstone | ConsumerGroupTombstone):
                # The group's metadata is gone, not its commits: a protocol upgrade or downgrade writes this
                # tombstone and keeps every offset, and a deleted group's offset tombstones come first (and
                # delete it in the store once none is left).
                store.clear_owners(c, record.group)
                store.set_members(c, record.group, 0 if store.group_id(c, record.group) is not None else None)
                self.members.forget(record.group)
                changed.discard(record.group)
            elif isinstance(record, GroupMetadata) and record.protocol_type == "consumer":
                store.set_members(c, record.group, len(record.members))
                if not record.members:
                    store.clear_owners(c, record.group)
                for m in record.members:
                    for topic, partitions in m.assignment:
                        for p in partitions:
                            store.set_owner(c, record.group, topic, p, m.client_host, m.client_id)
            elif isinstance(record, _MEMBER_RECORDS):
                changed.add(self.members.apply(record))
            elif isinstance(record, ShareGroupMetadata | ShareGroupTombstone):
                store.set_share_group(c, record.group, isinstance(record, ShareGroupMetadata))
        for group in changed:
            self._apply_members(store, group)
        if commits:
            self.decoded["OffsetCommit"] = self.decoded.get("OffsetCommit", 0) + commits

    def _apply_members(self, store: OffsetStore, group: str) -> None:
        """A consumer-protocol group's owners and member count, from its members' records (under the lock)."""
        owners, unresolved = self.members.owners(group, self.topic_names)
        store.clear_owners(self.cluster, group)
        for (topic, partition), (host, client_id) in owners.items():
            store.set_owner(self.cluster, group, topic, partition, host, client_id)
        store.set_members(self.cluster, group, self.members.member_count(group))
        if unresolved:
            self._unresolved.add(group)
        else:
            self._unresolved.discard(group)
