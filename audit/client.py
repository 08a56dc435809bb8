"""The client library: a confluent-kafka producer's delivery reports and a consumer's processing loop counted per
topic and minute of event time (audit/counts.py), and a reporter thread that hands the counts to the SLI sink, which
never blocks the application and spools while the audit cluster is away (docs/audit.md, "Client library")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Self

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError, Message, Producer

from audit.counts import ClientCounts
from audit.streams import CLIENT_STREAM, ClientOrigin, client_table
from pulse.sli_sink import SliPublisher

Clock = Callable[[], float]
"""Seconds since the epoch (`time.time`); injected by tests."""

DeliveryCallback = Callable[[KafkaError | None, Message], None]


def _now_ms(clock: Clock) -> int:
    return int(clock() * 1000)


def _event_ms(message: Message, clock: Clock) -> int:
    """The record timestamp; a record without one is counted in the minute it is seen."""
    kind, ts_ms = message.timestamp()
    return _now_ms(clock) if kind == TIMESTAMP_NOT_AVAILABLE or ts_ms < 0 else int(ts_ms)


class AuditedProducer:
    """A producer whose sends are counted: `sent` when `produce` accepted the record, `acknowledged` or `failed`
    from its delivery report (served by the application's own `poll`/`flush`), latency from the timestamp to the
    acknowledgement. The record timestamp is set here when the caller gives none, so the count and the record
    agree on its minute."""

    def __init__(self, producer: Producer, counts: ClientCounts, clock: Clock = time.time) -> None:
        self.producer = producer
        self.counts = counts
        self.clock = clock

    def produce(
        self, topic: str, value: Any = None, key: Any = None, *, timestamp: int = 0,
        on_delivery: DeliveryCallback | None = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        """`Producer.produce`; a BufferError leaves nothing counted (the application retries)."""
        ts_ms = timestamp or _now_ms(self.clock)

        def report(err: KafkaError | None, message: Message) -> None:
            if err is None:
                self.counts.count("acknowledged", topic, ts_ms, _now_ms(self.clock))
            else:
                self.counts.count("failed", topic, ts_ms)
            if on_delivery is not None:
                on_delivery(err, message)

        self.producer.produce(topic, value, key, timestamp=ts_ms, on_delivery=report, **kwargs)
        self.counts.count("sent", topic, ts_ms)

    def poll(self, timeout: float = 0) -> int:
        return self.producer.poll(timeout)

    def flush(self, timeout: float = -1) -> int:
        return self.producer.flush(timeout)


class ConsumerAudit:
    """Counting for a consumer's loop: `received` for every record a poll returned, `processed` when the
    application is done with it (its latency measured from the record timestamp then)."""

    def __init__(self, counts: ClientCounts, clock: Clock = time.time) -> None:
        self.counts = counts
        self.clock = clock

    def received(self, message: Message) -> None:
        if message.error() is None:
            self.counts.count("received", str(message.topic()), _event_ms(message, self.clock))

    def processed(self, message: Message) -> None:
        if message.error() is None:
            now_ms = _now_ms(self.clock)
            self.counts.count("processed", str(message.topic()), _event_ms(message, self.clock), now_ms)


class AuditReporter:
    """Every `interval_s`, the counts since the last report go to the SLI sink as `audit-client` rows (`offer`
    takes a lock and appends: the application never waits on Kafka). `stop` reports what is left."""

    def __init__(
        self, counts: ClientCounts, publisher: SliPublisher, origin: ClientOrigin,
        *, interval_s: float = 10.0, clock: Clock = time.time,
    ) -> None:  # fmt: skip
        self.counts = counts
        self.publisher = publisher
        self.origin = origin
        self.interval_s = interval_s
        self.clock = clock
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def report(self) -> int:
        """Hand the counts over now; the number of rows (0 when nothing was counted)."""
        rows = self.counts.drain()
        if rows:
            self.publisher.offer(CLIENT_STREAM, client_table(self.origin, rows, _now_ms(self.clock)))
        return len(rows)

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="audit-reporter", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.report()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.report()
