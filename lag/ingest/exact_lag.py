"""Exact time lag, the Kafka side: every `interval_s`, read the record at the committed offset of each lagging
group-partition (one consumer with assign(), one record per partition, at most `max_fetches_per_cycle` a cycle,
largest lag first) and remember its timestamp in the service's `RecordTimes`, which the enrichment turns into
seconds behind. Tesla's `kafka_consumer_freshness_tracker` (teslamotors/kafka-helmsman) reads timestamps the same way.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, TopicPartition

from lag.store.access import LagWriter
from lag.store.record_times import RecordKey, RecordTimes
from pulse.config import ExactTimeLagConfig
from pulse.lifecycle import Periodic

_LOG = logging.getLogger(__name__)


class RecordTimeReader:
    """Reads the timestamp of the first record at or after given offsets of one cluster's partitions."""

    def __init__(self, cluster: str, client_config: dict[str, Any]) -> None:
        self.cluster = cluster
        self._consumer = Consumer(
            {
                **client_config,
                "group.id": f"kafka-pulse-record-times-{uuid.uuid4().hex[:8]}",  # assign() only: never joins
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                # A committed offset below the log start (retention deleted it): the oldest record still there is
                # the first the group will read.
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                # One record per partition is wanted: keep prefetching small.
                "fetch.max.bytes": 1 << 20,
                "max.partition.fetch.bytes": 64 << 10,
                "queued.max.messages.kbytes": 1024,
                "isolation.level": "read_committed",
            }
        )

    def read(self, wanted: list[tuple[str, int, int]], timeout_s: float) -> dict[tuple[str, int, int], int]:
        """(topic, partition, offset) -> record timestamp ms, for those answered within `timeout_s`.

        A transaction marker or a compacted-away record at the offset yields the next record: the one the group
        will really read next. Partitions at their end or without timestamps are left out.
        """
        if not wanted:
            return {}
        by_tp = {(t, p): o for t, p, o in wanted}  # one offset per partition per read
        assignment = [TopicPartition(t, p, o) for (t, p), o in by_tp.items()]
        self._consumer.assign(assignment)
        self._consumer.resume(assignment)  # a partition paused in an earlier read stays paused otherwise
        found: dict[tuple[str, int, int], int] = {}
        pending = set(by_tp)
        deadline = time.monotonic() + timeout_s
        try:
            while pending and time.monotonic() < deadline:
                for msg in self._consumer.consume(num_messages=500, timeout=0.2):
                    tp = (msg.topic() or "", msg.partition() or 0)
                    if tp not in pending:
                        continue
                    error = msg.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF or not error.retriable():
                            pending.discard(tp)  # nothing after the offset, or a permanent error: no record to time
                            self._consumer.pause([TopicPartition(*tp)])
                        continue
                    if (msg.offset() or 0) < by_tp[tp]:
                        continue  # fetched for an earlier read of this partition
                    kind, ts = msg.timestamp()
                    if kind != TIMESTAMP_NOT_AVAILABLE:
                        found[(tp[0], tp[1], by_tp[tp])] = ts
                    pending.discard(tp)
                    self._consumer.pause([TopicPartition(*tp)])
        finally:
            self._consumer.unassign()
        return found

    def close(self) -> None:
        self._consumer.close()


def lagging_offsets(service: LagWriter, cluster: str) -> dict[RecordKey, int]:
    """Every lagging group-partition's committed offset in `cluster`, with its lag in records (under the lock)."""
    out: dict[RecordKey, int] = {}
    with service.locked() as store:
        for group in store.groups(cluster):
            for slot in store.slots(cluster, group):
                newest = store.commits.newest(slot.slot)
                hwm = store.hwms.latest(cluster, slot.topic, slot.partition)
                if newest is None or hwm is None or hwm <= newest[0]:
                    continue
                key = (cluster, slot.topic, slot.partition, newest[0])
                out[key] = max(out.get(key, 0), hwm - newest[0])
    return out


class ExactLagFetcher:
    """The per-cluster loop: pick the uncached lagging offsets, read their records, cache the timestamps."""

    def __init__(
        self, cluster: str, client_config: dict[str, Any], service: LagWriter, config: ExactTimeLagConfig
    ) -> None:
        self.cluster = cluster
        self.client_config = client_config
        self.service = service
        self.config = config
        self.cache = service.record_times(config.cache_size)
        """The service's timestamps cache, which this loop fills (under the lock)."""
        self.read_total = 0
        """Records read since start (for the metrics and the bench)."""
        self._reader: RecordTimeReader | None = None
        self.loop = Periodic(f"lag-{cluster}-record-times", config.interval_s, self._cycle, fixed_rate=False)

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop(timeout_s=self.config.fetch_timeout_s + 10)
        if self._reader is not None:
            self._reader.close()

    def _cycle(self) -> None:
        self.run_cycle()

    def run_cycle(self) -> int:
        """One bounded cycle; returns how many timestamps it learnt. Kafka errors wait for the next cycle."""
        cache = self.cache
        wanted = lagging_offsets(self.service, self.cluster)
        with self.service.locked():
            keys = choose_lookups(wanted, cache, self.config.max_fetches_per_cycle)
        if not keys:
            return 0
        try:
            if self._reader is None:
                self._reader = RecordTimeReader(self.cluster, self.client_config)
            found = self._reader.read([(t, p, o) for _c, t, p, o in keys], self.config.fetch_timeout_s)
        except KafkaException as exc:
            _LOG.warning("cluster %s: record timestamps not read this cycle: %s", self.cluster, exc)
            return 0
        with self.service.locked():
            for (topic, partition, offset), ts in found.items():
                cache.put((self.cluster, topic, partition, offset), ts)
        self.read_total += len(found)
        return len(found)


def choose_lookups(wanted: dict[RecordKey, int], cache: RecordTimes, limit: int) -> list[RecordKey]:
    """Which records to read this cycle: those not cached yet, the largest lag (records behind) first, at most
    `limit`, so one cycle's work is bounded however many groups lag."""
    missing = [(lag, key) for key, lag in wanted.items() if key not in cache]
    missing.sort(key=lambda item: (-item[0], item[1]))
    return [key for _lag, key in missing[:limit]]
