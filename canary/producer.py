"""Probe producer: one record per partition per round, acks=all, idempotent, no linger.

The latency SLO is the broker's ack timeout (`request.timeout.ms`) and bounds the client's wait on a silent broker;
the client gives a probe up only after `delivery_timeout_s` (`message.timeout.ms`), so an ordinary failover does
not make it re-send and duplicate (see `producer_settings`). A probe acknowledged after the SLO is bad all the
same (tracker rule 1b, availability rule 2). Latency comes from librdkafka's delivery report (`Message.latency()`:
produce() to acknowledgement), not from timing the callback, which `poll()` delays.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from canary.ledger import Ledger
from canary.view import ClusterView
from pulse.config import CanaryConfig, ClusterConfig
from pulse.kafka.probe_payload import Probe, encode
from pulse.kafka_log import KafkaLogLimiter
from pulse.profile import NO_AUTO_CREATE, client_config

_LOG = logging.getLogger(__name__)


def producer_settings(cluster: ClusterConfig, config: CanaryConfig, producer_id: str) -> dict[str, Any]:
    """librdkafka settings of the probe producer."""
    return {
        **client_config(cluster),
        "client.id": f"kafka-pulse-canary-{producer_id[:8]}",
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 0,
        # Timeouts (measured on the dev cluster, kill -9 of an in-sync follower; see docs/metrics.md): a probe
        # given up in flight (message.timeout.ms) makes the idempotent producer bump its epoch and re-send what it
        # was still retrying under new sequence numbers, which the broker cannot deduplicate: with the SLO as the
        # message timeout the canary wrote duplicates of its own in every failover. So the client keeps trying for
        # delivery_timeout_s (a failover longer than that can still duplicate, and is counted), and
        # the SLO is enforced around it instead: the broker answers REQUEST_TIMED_OUT (retried with the same
        # sequence, on the same connection) when a write waits longer than the SLO for the in-sync replicas, and
        # a broker that answers nothing at all (hung) loses the connection after two SLOs, so its partitions
        # move to their new leader without waiting out the delivery timeout.
        "message.timeout.ms": max(1, int(config.delivery_timeout_s * 1000)),
        "request.timeout.ms": max(1, int(config.latency_slo_s * 1000)),
        "socket.timeout.ms": max(10, int(2 * config.latency_slo_s * 1000)),
        # The backoff before reconnecting doubles up to 10 s by default; the canary wants a broker that is back
        # (or a connection closed by a timeout) probed again within an interval, at one connect per interval to
        # a dead broker.
        "reconnect.backoff.max.ms": max(100, min(10_000, int(config.interval_s * 1000))),
        **NO_AUTO_CREATE,
    }


def departure_grace_s(config: CanaryConfig) -> float:
    """How long after a broker left a partition's leadership or ISR a failed probe is still charged to it
    (canary/availability.py rule 3b): the canary sees the change up to two metadata refreshes late, and a probe
    sent then may wait one latency SLO behind the client's recovery from the stall."""
    return config.latency_slo_s + 2 * config.metadata_refresh_s


def error_name(error: KafkaError) -> str:
    """The stable librdkafka name (`_MSG_TIMED_OUT`, `NOT_ENOUGH_REPLICAS`), for labels and the SLI log."""
    return str(error.name())


class ProbeProducer:
    """Sends rounds of probes; delivery reports are handled in `poll`, on the caller's thread."""

    def __init__(
        self,
        cluster: ClusterConfig,
        config: CanaryConfig,
        producer_id: str,
        ledger: Ledger,
        view: ClusterView,
        settings: dict[str, Any] | None = None,
        kafka_log: KafkaLogLimiter | None = None,
    ) -> None:
        """`kafka_log`: the process part's librdkafka log limiter (a broker down is the canary's normal work)."""
        self._topic = config.topic
        self._producer_id = producer_id
        self._ledger = ledger
        self._view = view
        self._next_sequence: dict[int, int] = {}
        self._grace_s = departure_grace_s(config)
        self._settings = {
            **producer_settings(cluster, config, producer_id),
            **(kafka_log or KafkaLogLimiter()).settings(cluster.name, on_error=self._on_error),
            **(settings or {}),
        }
        self._producer = Producer(self._settings)
        self._fatal: str | None = None
        self.rounds = 0
        self.restarts = 0
        """Times the client was replaced after a fatal error."""

    def send_round(self, readable: Callable[[int], bool] = lambda _: True) -> int:
        """One probe to every known partition that `readable` says is being read; returns how many were sent."""
        if self._fatal is not None:
            self._replace_client()
        sent = 0
        for partition in filter(readable, self._view.partitions()):
            sequence = self._next_sequence.get(partition, 0)
            self._next_sequence[partition] = sequence + 1
            now, wall_ns = time.monotonic(), time.time_ns()
            leader = self._view.leader(partition, now, self._grace_s)
            sent_at = datetime.fromtimestamp(wall_ns / 1e9, tz=UTC)
            self._ledger.sent(partition, sequence, now, sent_at, leader)
            key, value = encode(Probe(self._producer_id, partition, sequence, wall_ns))
            try:
                self._producer.produce(
                    self._topic,
                    value=value,
                    key=key,
                    partition=partition,
                    timestamp=wall_ns // 1_000_000,
                    on_delivery=self._on_delivery(partition, sequence),
                )
                sent += 1
            except BufferError:
                self._ledger.failed(partition, sequence, "_QUEUE_FULL", time.monotonic())
            except Exception as exc:  # KafkaException for an unknown partition, a fatal error and the like
                code = exc.args[0] if exc.args else None
                if isinstance(code, KafkaError):
                    self._note_fatal(code)
                name = error_name(code) if isinstance(code, KafkaError) else type(exc).__name__
                self._ledger.failed(partition, sequence, name, time.monotonic())
        self.rounds += 1
        return sent

    def poll(self, timeout_s: float) -> None:
        self._producer.poll(timeout_s)

    def close(self, timeout_s: float = 2.0) -> None:
        """Wait briefly for in-flight probes; what is left is settled by the tracker's clock, not here."""
        self._producer.flush(timeout_s)

    def _on_error(self, error: KafkaError) -> None:
        """librdkafka's error callback: a fatal error leaves the client unable to produce ever again."""
        self._note_fatal(error)

    def _note_fatal(self, error: KafkaError) -> None:
        if error.fatal() or error.code() == KafkaError._FATAL:
            self._fatal = self._fatal or str(error.str())

    def _replace_client(self) -> None:
        """A fatal error is final for a librdkafka producer: the idempotent producer raises one when the partition
        leader does not know its sequence numbers (OUT_OF_ORDER_SEQUENCE_NUMBER after an unclean election). The
        canary must go on probing, so it takes a new client (a new producer id); what the old one still held is
        purged and fails, which settles those probes as failed."""
        _LOG.warning("canary producer replaced after a fatal error: %s", self._fatal)
        old, self._producer = self._producer, Producer(self._settings)
        self._fatal = None
        self.restarts += 1
        old.purge()
        old.flush(0)

    def _on_delivery(self, partition: int, sequence: int) -> Any:
        def report(error: KafkaError | None, message: Message) -> None:
            now = time.monotonic()
            if error is not None:
                self._note_fatal(error)
                self._ledger.failed(partition, sequence, error_name(error), now)
                return
            latency = message.latency()
            offset = message.offset()
            self._ledger.acked(partition, sequence, offset if offset is not None else -1, latency or 0.0, now)

        return report
