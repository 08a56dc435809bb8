"""The broker-side audit's I/O, with no change to any application: each cycle reads the offsets of the due minute
boundaries (a consumer's `offsets_for_times`: pulse/kafka/offsets.py), every watched group's committed offsets, and
publishes the minutes that settle (audit/minutes.py) as `audit-broker` rows: to the SLI sink (Kafka) and to the
audit's Parquet log (audit/broker_log.py), each where given."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from confluent_kafka import OFFSET_END, Consumer, TopicCollection
from confluent_kafka.admin import AdminClient

from audit.broker_log import BrokerLog
from audit.minutes import MinuteAudit, MinuteBook, due_boundaries
from audit.streams import BROKER_STREAM, broker_table
from pulse.admin_requests import await_result
from pulse.kafka.group_offsets import GroupOffsetsReader, OffsetsUnread
from pulse.kafka.offsets import read_offsets
from pulse.sli_sink import SliPublisher

_LOG = logging.getLogger(__name__)

MAX_BOUNDARIES_PER_CYCLE = 10
"""A cycle reads at most this many boundaries per topic; a backlog after a pause or a `since_ms` far back is caught
up over the next cycles. Each boundary is one ListOffsets round per leader for every topic due at it, not per topic."""


class BrokerAudit:
    """One cluster's audit of `topics` against `groups`; `cycle(now_ms)` from one thread, every 10-30 s (the
    latency's resolution is the cycle's interval)."""

    def __init__(
        self,
        cluster: str,
        consumer: Consumer,
        admin: AdminClient,
        offsets: GroupOffsetsReader,
        topics: Sequence[str],
        groups: Sequence[str],
        publisher: SliPublisher | None,
        *,
        log: BrokerLog | None = None,
        grace_s: float = 10.0,
        max_wait_s: float = 900.0,
        since_ms: int | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        self.cluster = cluster
        self.consumer = consumer
        """Reads metadata and offsets only: never subscribes, never commits (give it any unused `group.id`)."""
        self.admin = admin
        """Reads the topics' partitions (one Metadata request for all; never Admin ListOffsets)."""
        self.offsets = offsets
        """Reads the groups' committed offsets: one OffsetFetch per coordinator for every group (never librdkafka's:
        pulse/kafka/group_offsets.py says why)."""
        self.topics = tuple(topics)
        self.publisher = publisher
        """The SLI sink the rows are published to (topic `<prefix>audit-broker`); None publishes nothing."""
        self.log = log
        """The Parquet log the rows are written to (an SLO's `audit` source); None writes nothing."""
        self.grace_ms = int(grace_s * 1000)
        self.since_ms = since_ms
        self.timeout_s = timeout_s
        self.book = MinuteBook(groups, int(max_wait_s * 1000))

    def cycle(self, now_ms: int) -> list[MinuteAudit]:
        """Read, settle, publish; returns the settled minutes. KafkaException or TimeoutError when the cluster
        cannot be read: the boundaries read so far are kept, nothing settles, the next cycle catches up."""
        partitions = self._partitions()
        self._read_boundaries(partitions, now_ms)
        committed = self._committed(partitions)
        for group in self.book.groups:
            self.book.observe_commits(group, committed[group], now_ms)
        audits = self.book.settle(now_ms)
        if audits:
            table = broker_table(self.cluster, audits, now_ms)
            if self.log is not None:
                self.log.record(table)
            if self.publisher is not None:
                self.publisher.offer(BROKER_STREAM, table)
        return audits

    def close(self) -> None:
        """Close the consumer and the offsets' client (the admin client has nothing to close); the audit is not used
        afterwards."""
        self.consumer.close()
        self.offsets.close()

    def _partitions(self) -> dict[str, list[int]]:
        """Every watched topic's partitions from one Metadata request (one per topic cost 1,000 requests a cycle at
        1,000 topics); KafkaException for a topic that is not there."""
        futures = self.admin.describe_topics(TopicCollection(list(self.topics)), request_timeout=self.timeout_s)
        deadline = time.monotonic() + self.timeout_s + 5  # librdkafka's own timeout ends first
        return {
            topic: sorted(p.id for p in await_result(future, max(deadline - time.monotonic(), 0.001)).partitions)
            for topic, future in futures.items()
        }

    def _read_boundaries(self, partitions: dict[str, list[int]], now_ms: int) -> None:
        """The due boundaries of every topic, each boundary one ListOffsets round over all the topics due at it (and
        one for the log ends), so requests grow with the leaders, not with the topics."""
        due = {
            topic: due_boundaries(self.book.read_up_to(topic), now_ms, self.grace_ms, self.since_ms)
            for topic in self.topics
        }
        due = {topic: boundaries[:MAX_BOUNDARIES_PER_CYCLE] for topic, boundaries in due.items() if boundaries}
        if not due:
            return
        ends = read_offsets(self.consumer, [(t, p) for t in due for p in partitions[t]], OFFSET_END, self.timeout_s)
        for boundary in sorted({b for boundaries in due.values() for b in boundaries}):
            asked = [topic for topic, boundaries in due.items() if boundary in boundaries]
            found = read_offsets(
                self.consumer, [(t, p) for t in asked for p in partitions[t]], boundary, self.timeout_s
            )
            for topic in asked:
                # No record at or after the boundary yet: the minute ends at the log's end as read this cycle.
                keys = [(topic, p) for p in partitions[topic]]
                self.book.record_boundary(
                    topic, boundary, {p: found[t, p] if found[t, p] >= 0 else ends[t, p] for t, p in keys}
                )

    def _committed(self, partitions: dict[str, list[int]]) -> dict[str, dict[tuple[str, int], int]]:
        """Every watched group's committed offsets on the watched partitions; OffsetsUnread naming the groups that
        could not be read (the cycle then settles nothing)."""
        wanted = [(t, p) for t in self.topics for p in partitions[t]]
        found = self.offsets.read(dict.fromkeys(self.book.groups, wanted))
        failed = sorted(f"{g[:249]!r} ({read.error})" for g, read in found.items() if read.code)
        if failed:
            raise OffsetsUnread(f"committed offsets not read for {len(failed)} groups: {', '.join(failed[:5])}")
        return {group: dict(read.offsets) for group, read in found.items()}
