"""Offset-commit probe: commit a small group's offset once per interval, timing the group coordinator.

Kept apart from the data-plane consumer, which uses assign() and never commits, so a slow coordinator shows here
and never as end-to-end latency (Strimzi canary #161).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from pulse.config import ClusterConfig
from pulse.kafka_log import KafkaLogLimiter
from pulse.profile import client_config


@dataclass(frozen=True)
class CommitResult:
    ok: bool
    latency_s: float
    error: str | None = None


class CommitProbe:
    """Commits partition 0's high watermark of the monitor topic for `group` (a group with no members), so the lag
    evaluator sees kafka-pulse's own probe group caught up instead of a consumer that never keeps up."""

    def __init__(
        self, cluster: ClusterConfig, topic: str, group: str, timeout_s: float, kafka_log: KafkaLogLimiter | None = None
    ) -> None:
        self._topic = topic
        self.group = group
        self._offset = 0
        self._timeout_s = timeout_s
        self._consumer = Consumer(
            {
                **client_config(cluster),
                "group.id": group,
                "client.id": "kafka-pulse-canary-commit",
                "enable.auto.commit": False,
                "socket.timeout.ms": max(10, int(timeout_s * 1000)),
                # failures are counted by error name; reconnect chatter is thinned and counted
                **(kafka_log or KafkaLogLimiter()).settings(cluster.name),
            }
        )

    def commit_once(self) -> CommitResult:
        self._consumer.poll(0)  # serves the queued librdkafka lines to the limiter, so they never pile up
        self._offset = self._high_watermark() or self._offset + 1
        started = time.monotonic()
        try:
            self._consumer.commit(offsets=[TopicPartition(self._topic, 0, self._offset)], asynchronous=False)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            name = str(error.name()) if isinstance(error, KafkaError) else type(exc).__name__
            return CommitResult(False, time.monotonic() - started, name)
        return CommitResult(True, time.monotonic() - started)

    def _high_watermark(self) -> int:
        """Partition 0's end offset; 0 when it cannot be read (the next offset in sequence is committed then): the
        commit probe times the coordinator, and a slow ListOffsets is not its failure."""
        try:
            _low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self._topic, 0), timeout=self._timeout_s, cached=False
            )
        except KafkaException:
            return 0
        return int(high)

    def close(self) -> None:
        self._consumer.close()
