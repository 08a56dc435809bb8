"""Probe consumer: reads every partition with assign() (no group, so no rebalance can blind it).

`auto.offset.reset=error` makes an out-of-range position (and librdkafka's KIP-320 log-truncation check) visible
instead of silently jumping: the consumer then reads the watermarks and tells the ledger whether records were
deleted before it read them (log start moved past its position) or truncated away (the log now ends before it).
The same class, with `client.rack` set and no ledger, is the closest-replica (KIP-392) probe, which only measures
latency and which broker it fetched from.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from canary.ledger import Ledger
from pulse.config import CanaryConfig, ClusterConfig
from pulse.kafka.probe_payload import MalformedProbe, decode
from pulse.kafka_log import KafkaLogLimiter
from pulse.profile import NO_AUTO_CREATE, client_config

_LOG = logging.getLogger(__name__)

REPOSITION_RETRY_S = 1.0
"""After a failed watermark read, librdkafka has stopped the partition (`auto.offset.reset=error`): ask again this
much later, so a partition never stays unread (a topic just created fails ListOffsets on a leader still loading it)."""


@dataclass(frozen=True)
class Arrival:
    """One of our probes as a consumer saw it (the closest-replica probe reports these)."""

    partition: int
    sequence: int
    latency_s: float
    """Producer wall clock in the payload to consumer wall clock (same host: same clock)."""


@dataclass
class ConsumerCounts:
    """What the consumer saw besides probes; read by the metrics."""

    malformed: int = 0
    foreign: int = 0
    """Records of other canary instances sharing the topic (skipped)."""
    resets: int = 0
    """Out-of-range positions handled (records deleted or truncated under the consumer)."""
    errors: dict[str, int] | None = None

    def error(self, name: str) -> None:
        self.errors = self.errors or {}
        self.errors[name] = self.errors.get(name, 0) + 1


class ProbeConsumer:
    """Reads the monitor topic; call `sync_partitions` when partitions appear and `poll_once` in a loop."""

    def __init__(
        self,
        cluster: ClusterConfig,
        config: CanaryConfig,
        producer_id: str,
        ledger: Ledger | None,
        client_rack: str | None = None,
        on_arrival: Callable[[Arrival], None] | None = None,
        statistics_cb: Callable[[str], None] | None = None,
        kafka_log: KafkaLogLimiter | None = None,
    ) -> None:
        self._topic = config.topic
        self._producer_id = producer_id.encode()
        self._ledger = ledger
        self._on_arrival = on_arrival
        settings: dict[str, Any] = {
            **client_config(cluster),
            "group.id": f"kafka-pulse-canary-reader-{producer_id}",  # never joined nor committed: assign() only
            "client.id": f"kafka-pulse-canary-{producer_id[:8]}-{'closest' if client_rack else 'reader'}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "isolation.level": "read_uncommitted",
            "fetch.wait.max.ms": 100,
            **(kafka_log or KafkaLogLimiter()).settings(cluster.name),
            **NO_AUTO_CREATE,
        }
        if client_rack is not None:
            settings["client.rack"] = client_rack
        if statistics_cb is not None:
            settings["statistics.interval.ms"] = 1000
            settings["stats_cb"] = statistics_cb
        self._consumer = Consumer(settings)
        self._assigned: set[int] = set()
        self._next_offset: dict[int, int] = {}
        self._paused: set[int] = set()
        self._retry: dict[int, tuple[float, str]] = {}
        """Partitions whose reposition failed: when to try again (monotonic), and the error that stopped them."""
        self._lock = threading.Lock()
        self.counts = ConsumerCounts()

    @property
    def assigned(self) -> frozenset[int]:
        """Partitions being read; the producer probes only these, so no probe is sent before its reader."""
        with self._lock:
            return frozenset(self._assigned)

    def sync_partitions(self, partitions: list[int], timeout_s: float = 5.0) -> None:
        """Assign partitions not yet assigned: at their current end on the first call (start), from the
        beginning later (a partition added while running holds nothing older than our first probe to it).

        The start position is read explicitly rather than left to OFFSET_END, which librdkafka resolves lazily:
        a probe written in between would be skipped and look lost.
        """
        with self._lock:
            new = [p for p in partitions if p not in self._assigned]
        if not new:
            return
        starting = not self._assigned
        assignment = []
        for partition in new:
            offset = OFFSET_BEGINNING
            if starting:
                try:
                    _, offset = self._consumer.get_watermark_offsets(
                        TopicPartition(self._topic, partition), timeout=timeout_s, cached=False
                    )
                except KafkaException as exc:
                    _LOG.debug("canary %s[%d]: end offset unavailable, not read yet: %s", self._topic, partition, exc)
                    continue
            assignment.append(TopicPartition(self._topic, partition, offset))
            self._next_offset[partition] = max(offset, 0)
        with self._lock:
            if assignment:
                self._consumer.incremental_assign(assignment)
                self._assigned.update(tp.partition for tp in assignment)

    def pause(self, partitions: list[int]) -> None:
        """Stop fetching these partitions (an operator holding the canary back; the loss test uses it)."""
        with self._lock:
            self._consumer.pause([TopicPartition(self._topic, p) for p in partitions])
            self._paused.update(partitions)

    def resume(self, partitions: list[int]) -> None:
        with self._lock:
            self._consumer.resume([TopicPartition(self._topic, p) for p in partitions])
            self._paused.difference_update(partitions)

    def poll_once(self, timeout_s: float) -> None:
        """Handle at most a batch of records or errors; never raises for Kafka trouble."""
        if self._retry:
            self._retry_repositions()
        try:
            # consume() waits for a full batch or the whole timeout, which would stamp every arrival late by up
            # to timeout_s; poll() returns on the first record, then consume(timeout=0) drains what is queued.
            first = self._consumer.poll(timeout_s)
            if first is None:
                return
            messages = [first, *self._consumer.consume(num_messages=499, timeout=0)]
        except KafkaException as exc:
            self.counts.error(str(exc.args[0].name()) if exc.args else "unknown")
            return
        now = time.monotonic()
        for message in messages:
            error = message.error()
            if error is not None:
                self._on_error(message, error)
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                continue
            self._next_offset[partition] = offset + 1
            if message.key() != self._producer_id:
                self.counts.foreign += 1
                continue
            try:
                probe = decode(message.value())
            except MalformedProbe as exc:
                self.counts.malformed += 1
                _LOG.debug("malformed record at %s[%d]@%d: %s", self._topic, partition, offset, exc)
                continue
            if self._ledger is not None:
                self._ledger.arrived(partition, probe.sequence, offset, now)
            if self._on_arrival is not None:
                latency = max(0.0, time.time() - probe.sent_ns / 1e9)
                self._on_arrival(Arrival(partition, probe.sequence, latency))

    def close(self) -> None:
        self._consumer.close()

    def _on_error(self, message: Any, error: KafkaError) -> None:
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            return
        name = str(error.name())
        self.counts.error(name)
        partition = message.partition()
        if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._LOG_TRUNCATION):
            if partition is not None and partition >= 0:
                self._reposition(partition, name)
            return
        _LOG.debug("consumer error on %s: %s", self._topic, error.str())

    def _retry_repositions(self) -> None:
        now = time.monotonic()
        for partition, (due, why) in sorted(self._retry.items()):
            if due <= now:
                self._reposition(partition, why)

    def _reposition(self, partition: int, why: str) -> None:
        """Our position is no longer in the log: find out which way it moved, settle, and go on from there."""
        tp = TopicPartition(self._topic, partition)
        asked_s = time.monotonic()
        try:
            low, high = self._consumer.get_watermark_offsets(tp, timeout=5.0, cached=False)
        except KafkaException as exc:
            _LOG.warning(
                "canary %s[%d]: %s, and watermarks unavailable (asking again in %.0f s): %s",
                self._topic,
                partition,
                why,
                REPOSITION_RETRY_S,
                exc,
            )
            self._retry[partition] = (time.monotonic() + REPOSITION_RETRY_S, why)
            return
        self._retry.pop(partition, None)
        position = self._next_offset.get(partition, low)
        now = time.monotonic()
        self.counts.resets += 1
        if position < low:
            _LOG.warning(
                "canary %s[%d]: records %d..%d deleted before they were read", self._topic, partition, position, low - 1
            )
            if self._ledger is not None:
                self._ledger.offsets_deleted(partition, low, now)
            target = low
        else:
            _LOG.warning(
                "canary %s[%d]: log truncated below our position %d (it ends at %d)",
                self._topic,
                partition,
                position,
                high,
            )
            target = min(position, high)
            if self._ledger is not None:
                self._ledger.truncated(partition, high, now, acked_before=asked_s)
                # Probes written since the truncation may sit below both: go on from the first one unread.
                first_unread = self._ledger.first_unread_offset(partition)
                if first_unread is not None:
                    target = min(target, first_unread)
            target = max(target, low)
        self._next_offset[partition] = target
        with self._lock:
            self._consumer.incremental_unassign([tp])
            self._consumer.incremental_assign([TopicPartition(self._topic, partition, target)])
            if partition in self._paused:
                self._consumer.pause([tp])


def fetch_brokers(statistics_json: str, topic: str) -> dict[int, int]:
    """Partition -> broker it is fetched from, from librdkafka statistics (`partitions[].broker`)."""
    stats = json.loads(statistics_json)
    partitions = stats.get("topics", {}).get(topic, {}).get("partitions", {})
    return {
        int(p): int(info["broker"])
        for p, info in partitions.items()
        if p.lstrip("-").isdigit() and int(p) >= 0 and isinstance(info.get("broker"), int) and info["broker"] >= 0
    }
