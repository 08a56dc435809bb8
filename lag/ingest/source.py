"""Ingestion from a real cluster: HWMs polled with ListOffsets every `offset_refresh_s`, and commits either from
`__consumer_offsets` consumed from the start (commit timestamps from the broker) or, where the internal topic cannot
be read, through the Admin API (`admin_source.py`). Kafka errors are caught here and turn the cluster unknown,
never a verdict. Each HWM round also refreshes the partition placement behind the page-cache hint.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from lag.diagnose.page_cache import Placement, estimate, produce_rate
from lag.ingest.admin_clients import AdminClients, gather, read_offsets, request_timeout_s
from lag.ingest.admin_source import GROUP_OFFSETS_FEED, AdminOffsetsReader
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
from lag.ingest.records import GroupMetadata, GroupTombstone, OffsetCommit, OffsetTombstone, Record, decode_record
from lag.store.access import LagWriter
from lag.store.freshness import SourceHealth
from lag.store.offsets import OffsetStore
from pulse.config import PageCacheConfig
from pulse.profile import ADMIN_SETTINGS

_LOG = logging.getLogger(__name__)
OFFSETS_TOPIC = "__consumer_offsets"
COMMITS_FEED = OFFSETS_TOPIC
"""The health feed of the `__consumer_offsets` reader: without fresh commits, groups would look stopped."""
_RENEW_AFTER_FAILURES = 3
"""Consecutive failed HWM rounds (or Admin API polls) after which that thread's admin client is replaced."""
INGEST_CHUNK = 1000
"""Records applied per hold of the service lock: about 4 ms of work, so a status request waits no longer
(docs/benchmarks.md, status while ingesting)."""
_MEMBER_RECORDS = (
    ConsumerGroupMember,
    ConsumerGroupMemberLeft,
    ConsumerGroupAssignment,
    ConsumerGroupAssignmentTombstone,
)


def topic_id_bytes(topic_id: Any) -> bytes:
    """A confluent-kafka `Uuid` as the 16 bytes `__consumer_offsets` records carry."""
    msb, lsb = topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits()
    return int(msb).to_bytes(8, "big", signed=True) + int(lsb).to_bytes(8, "big", signed=True)


Ingestion = Literal["consumer_offsets", "admin"]

CATCH_UP_GIVE_UP_S = 600.0
"""A reader still short of the backlog's end after this long is taken as caught up (logged with the partitions):
a partition whose only records a consumer never sees cannot hold its cluster unknown for ever."""


def behind(ends: dict[int, int], starts: dict[int, int], positions: dict[int, int]) -> list[int]:
    """`__consumer_offsets` partitions whose backlog, up to `ends` (the HWMs when the reader started), is not read
    yet (pure). Empty partitions (start >= end) are read; a position is the consumer's, which moves past control
    records too."""
    return sorted(p for p, end in ends.items() if starts.get(p, 0) < end and positions.get(p, -1) < end)


class KafkaLagSource:
    """One cluster's HWM poller plus its commits reader: `__consumer_offsets` or the Admin API."""

    def __init__(
        self,
        cluster: str,
        client_config: dict[str, Any],
        service: LagWriter,
        health: SourceHealth,
        ingestion: Ingestion = "consumer_offsets",
        page_cache: PageCacheConfig | None = None,
    ) -> None:
        self.cluster = cluster
        self.client_config = dict(client_config)
        self.service = service
        self.health = health
        self.ingestion = ingestion
        self.page_cache = page_cache if page_cache is not None and page_cache.enabled else None
        self.decoded: Counter[str] = Counter()
        """Records read from __consumer_offsets by decoded kind (OffsetCommit, Undecodable, UnknownRecord, ...)."""
        service.count_records(cluster, self.decoded)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._hwm_reader: Consumer | None = None
        """The HWM thread's own consumer: metadata and high watermarks (ListOffsets through `offsets_for_times`,
        lag/ingest/admin_clients.py says why not the Admin API). Created on first use: configuring a source connects to
        nothing (Burrow's module contract)."""
        self._hwm_clients = AdminClients(self._new_admin)
        """The HWM thread's admin client (topic ids only); the Admin API reader has its own."""
        self._topics: dict[str, int] = {}
        self._failed_rounds = 0
        self.admin_reader: AdminOffsetsReader | None = None
        self.members = ConsumerGroupMembers()
        """Consumer-protocol (KIP-848) groups' members and assignments, from `__consumer_offsets`."""
        self._topic_names: dict[bytes, str] = {}
        """Topic id -> name, read (DescribeTopics) only while a consumer-protocol assignment names an unknown id."""
        self._unresolved: set[str] = set()
        """Consumer-protocol groups whose assignment names a topic id not in `_topic_names` yet."""
        # Judged only while commits can be read too.
        health.expect(cluster, GROUP_OFFSETS_FEED if ingestion == "admin" else COMMITS_FEED)

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._started = True
        self.poll_hwms()  # commits are only stored once their partition has a HWM (Burrow's rule)
        if self.ingestion == "admin":
            self.admin_reader = AdminOffsetsReader(
                self.cluster, AdminClients(self._new_admin), self.service, self.health
            )
            self.admin_reader.poll()
        targets = [self._hwm_loop, self._offsets_loop if self.admin_reader is None else self._admin_loop]
        for target in targets:
            thread = threading.Thread(target=target, name=f"lag-{self.cluster}-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stops the threads, then closes the HWM reader: left open, it went on reconnecting to a cluster that was
        gone, writing a line a second for the life of the process."""
        self._stop.set()
        for thread in reversed(self._threads):
            thread.join(timeout=10)
        if any(thread.is_alive() for thread in self._threads):
            return  # a read still in progress owns the reader; closing it under that read is unsafe
        reader, self._hwm_reader = self._hwm_reader, None
        if reader is not None:
            reader.close()

    # -- HWMs ------------------------------------------------------------------------------------------------------

    def _hwm_loop(self) -> None:
        """Rounds start `offset_refresh_s` apart, counted from the previous round's start: a round that takes
        most of the interval (10,000 partitions on a loaded host) must not push the next past `stale_after_s`."""
        started = time.monotonic()
        while not self._stop.wait(max(0.0, started + self.service.settings.offset_refresh_s - time.monotonic())):
            started = time.monotonic()
            self.poll_hwms()

    def poll_hwms(self) -> bool:
        """One ListOffsets(latest) round for every partition of every non-internal topic; False when it failed."""
        if not self._started:
            raise RuntimeError(f"lag source {self.cluster}: poll_hwms() before start()")
        if self._hwm_reader is None:
            self._hwm_reader = self._new_hwm_reader()
        reader = self._hwm_reader
        reader.poll(0)  # serves librdkafka's log lines and errors (pulse/kafka_log.py), queued until polled
        try:
            metadata = reader.list_topics(timeout=request_timeout_s(sum(self._topics.values())))
            listed = {n: t for n, t in metadata.topics.items() if not n.startswith("__") and t.error is None}
            topics = {name: len(t.partitions) for name, t in listed.items()}
            placements = {
                (name, p.id): Placement(p.leader, tuple(p.replicas))
                for name, t in listed.items()
                for p in t.partitions.values()
            }
            request = [(t, p) for t, n in topics.items() for p in range(n)]
            results = read_offsets(reader, request, OFFSET_END, request_timeout_s(len(request)))
        except (KafkaException, TimeoutError, Exception) as exc:  # any failure means: this cluster is unknown now
            self.health.mark_error(self.cluster, f"{type(exc).__name__}: {exc}")
            self._failed_rounds += 1
            if self._failed_rounds % _RENEW_AFTER_FAILURES == 0:
                self._renew_admin()
            return False
        now = self.service.clock_ms()
        with self.service.locked() as store:
            for gone in set(self._topics) - set(topics):
                store.delete_topic(self.cluster, gone)
            for (topic, partition), offset in results.items():
                store.add_hwm(self.cluster, topic, partition, offset, now)
            if self.page_cache is not None:
                self._estimate_page_cache(store, placements)
        self._topics = topics
        self._failed_rounds = 0
        self.health.mark_ok(self.cluster)
        if self._unresolved:
            self._resolve_topic_ids(listed)
        return True

    def _resolve_topic_ids(self, topics: Iterable[str]) -> None:
        """Read the topic ids that consumer-protocol assignments name, then give their groups owners."""
        names = sorted(topics)
        timeout = request_timeout_s(len(names))
        try:
            futures = self._hwm_clients.client.describe_topics(TopicCollection(names), request_timeout=timeout)
            self._hwm_clients.track(futures.values())
            ids = {name: info.topic_id for name, info in gather(futures, timeout + 5).items()}
        except Exception as exc:  # owners wait for the next round; the verdicts do not depend on them
            _LOG.info("lag source %s: topic ids not read (%s: %s)", self.cluster, type(exc).__name__, exc)
            return
        self._topic_names = {topic_id_bytes(i): name for name, i in ids.items() if i is not None}
        with self.service.locked() as store:
            for group in sorted(self._unresolved):
                self._apply_members(store, group)

    def _new_admin(self) -> AdminClient:
        return AdminClient({**self.client_config, **ADMIN_SETTINGS, "socket.timeout.ms": 5000})

    def _new_hwm_reader(self) -> Consumer:
        """Never subscribes, joins or commits; reads uncommitted ends (HWMs, as Burrow does), not the LSO."""
        config = {
            **self.client_config,
            "group.id": f"kafka-pulse-lag-hwm-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
            "socket.timeout.ms": 5000,
        }
        return Consumer(config)

    def _renew_admin(self) -> None:
        """A fresh client after repeated failures: after a broker froze and came back, a client's connections or
        requests can stay wedged while a new client gets answers at once (seen with SIGSTOP/SIGCONT). The old one
        is kept until its pending requests end (admin_clients.py). The HWM consumer's reads are synchronous, so
        nothing of it is in flight here."""
        _LOG.info("lag source %s: %d HWM rounds failed; renewing its clients", self.cluster, self._failed_rounds)
        old, self._hwm_reader = self._hwm_reader, self._new_hwm_reader()
        if old is not None:
            old.close()
        self._hwm_clients.renew()

    def _estimate_page_cache(self, store: OffsetStore, placements: dict[tuple[str, int], Placement]) -> None:
        """Per broker, how many seconds of writes its page cache holds (called under the service lock)."""
        assert self.page_cache is not None
        rates: dict[tuple[str, int], float] = {}
        if self.page_cache.size_bytes is not None:
            for topic, partition in placements:
                rate = produce_rate(*store.hwms.history(self.cluster, topic, partition))
                if rate is not None:
                    rates[(topic, partition)] = rate
        self.service.set_page_cache(
            self.cluster,
            estimate(
                placements, rates, self.page_cache.size_bytes, self.page_cache.record_bytes, self.page_cache.window_s
            ),
        )

    # -- __consumer_offsets ----------------------------------------------------------------------------------------

    def _offsets_loop(self) -> None:
        """Reads `__consumer_offsets` until stopped. Its health is a feed of its own: error records mark it, a
        clean read refreshes it, and a crash stops it, so its groups turn unknown instead of looking stopped."""
        try:
            self._read_offsets()
        except Exception as exc:  # a bug or a client failure must not leave its groups judged on old commits
            _LOG.exception("lag source %s: the %s reader stopped", self.cluster, OFFSETS_TOPIC)
            self.health.mark_stopped(self.cluster, f"{type(exc).__name__}: {exc}", COMMITS_FEED)

    def _read_offsets(self) -> None:
        config = {
            **self.client_config,
            "group.id": f"kafka-pulse-lag-{uuid.uuid4().hex[:8]}",  # never joined or committed: we assign()
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
        consumer = Consumer(config)
        try:
            while not self._stop.is_set():
                consumer.poll(0)  # serves librdkafka's log lines while no partition is assigned yet
                try:
                    md = consumer.list_topics(OFFSETS_TOPIC, timeout=5).topics.get(OFFSETS_TOPIC)
                except KafkaException as exc:
                    self.health.mark_error(self.cluster, f"listing {OFFSETS_TOPIC}: {exc}", COMMITS_FEED)
                    self._stop.wait(1.0)
                    continue
                if md is not None and md.error is None and md.partitions:
                    partitions = sorted(md.partitions)
                    consumer.assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
                    break
                self.health.mark_ok(self.cluster, COMMITS_FEED)  # no group has committed yet: nothing is missed
                self._stop.wait(1.0)
            else:
                return
            # Groups are judged only once the backlog is read: judged half-way, a group that keeps up would look
            # stopped on its old commits (Burrow #459, #740: minutes to half an hour of false verdicts at start).
            backlog: tuple[dict[int, int], dict[int, int]] | None = None
            caught_up, started = False, time.monotonic()
            refused: KafkaError | None = None
            """A refusal to read (TOPIC_AUTHORIZATION_FAILED: no Read ACL on the topic): librdkafka reports it once
            in a while, not at every consume, so it stays the reason until records come; other errors pass."""
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=10_000, timeout=0.5)
                errors = [e for m in messages if (e := m.error()) is not None]
                if messages:
                    self.ingest([(m.key(), m.value()) for m in messages if m.error() is None])
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
        late = behind(ends, starts, positions)
        if late and waited_s > CATCH_UP_GIVE_UP_S:
            _LOG.warning("lag source %s: %s partitions %s still short of their end after %.0f s; judging anyway",
                         self.cluster, OFFSETS_TOPIC, late, waited_s)  # fmt: skip
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
        decoded = [decode_record(key, value) for key, value in records]  # pure: no lock needed
        for at in range(0, len(decoded), INGEST_CHUNK):
            self.service.let_readers_in()  # else a request woken on the other core can lose every chunk to us
            with self.service.locked() as store:
                self._apply(store, decoded[at : at + INGEST_CHUNK])

    def _apply(self, store: OffsetStore, records: list[Record]) -> None:
        """Apply decoded records in order (under the lock); member records' owners once at the end."""
        now = self.service.clock_ms()
        c = self.cluster
        changed: set[str] = set()
        for record in records:
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

    def _apply_members(self, store: OffsetStore, group: str) -> None:
        """A consumer-protocol group's owners and member count, from its members' records (under the lock)."""
        owners, unresolved = self.members.owners(group, self._topic_names)
        store.clear_owners(self.cluster, group)
        for (topic, partition), (host, client_id) in owners.items():
            store.set_owner(self.cluster, group, topic, partition, host, client_id)
        store.set_members(self.cluster, group, self.members.member_count(group))
        if unresolved:
            self._unresolved.add(group)
        else:
            self._unresolved.discard(group)

    # -- Admin API mode --------------------------------------------------------------------------------------------

    def _admin_loop(self) -> None:
        assert self.admin_reader is not None
        failed = 0
        while not self._stop.wait(self.service.settings.effective_group_refresh_s()):
            failed = 0 if self.admin_reader.poll() else failed + 1
            if failed and failed % _RENEW_AFTER_FAILURES == 0:
                _LOG.info("lag source %s: %d offset polls failed; renewing their admin client", self.cluster, failed)
                self.admin_reader.clients.renew()
