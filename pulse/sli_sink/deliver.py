"""Spooled events to Kafka: an idempotent producer (`enable.idempotence`, `acks=all`), one round at a time; a round
produces the events in spool order and waits for every delivery report, so the caller removes from the spool only
what the cluster acknowledged. `Delivery` is the seam the sink's thread calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from pulse.sli_sink.encode import SpooledEvent

_LOG = logging.getLogger(__name__)

PERMANENT = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError._INVALID_ARG,
    }
)
"""Delivery errors no retry can cure: the event is dropped (`reason="rejected"`). Every other error (cluster away,
topic missing, not authorized, timeouts) keeps it spooled for the next round."""

PRODUCER_SETTINGS: dict[str, Any] = {
    "enable.idempotence": True,
    "acks": "all",
    "compression.type": "zstd",
    "linger.ms": 50,
    "client.id": "kafka-pulse-sli-sink",
}
"""On top of the cluster's connection profile. Idempotence keeps librdkafka's own retries from writing a record
twice or out of order within a run; zstd because the JSON rows of a batch repeat their keys (bench figures in
docs/benchmarks.md)."""


@dataclass
class Outcome:
    """What one round did with its events."""

    delivered: set[tuple[str, int]] = field(default_factory=set)
    """Identities the cluster acknowledged (acks=all)."""
    rejected: dict[tuple[str, int], str] = field(default_factory=dict)
    """Identity -> error name, for events refused for good (`PERMANENT`)."""
    error: str | None = None
    """The first transient error of the round (the events it hit stay spooled), None when there was none."""


class Delivery(Protocol):
    """What the sink's thread needs from Kafka."""

    def deliver(self, events: Sequence[SpooledEvent], while_waiting: Callable[[], bool]) -> Outcome:
        """Produce `events` in order and wait for every report; call `while_waiting` between polls and give up
        (events undelivered, still spooled) when it answers False."""
        ...

    def close(self) -> None: ...


class KafkaDelivery:
    """One idempotent producer, made at the first round and again after a fatal error (an idempotent producer
    that lost its sequence state must be replaced). Not thread-safe: only the sink's thread calls it."""

    def __init__(self, client_config: dict[str, Any], topic_prefix: str, timeout_s: float) -> None:
        self.client_config = client_config
        """The cluster's librdkafka settings (`pulse.profile.client_config`); may hold secrets, never logged."""
        self.topic_prefix = topic_prefix
        self.timeout_s = timeout_s
        """librdkafka's `message.timeout.ms`: an event not acknowledged by then is reported failed and stays
        spooled."""
        self._producer: Producer | None = None
        self.last_client_error: str | None = None

    def _client(self) -> Producer:
        if self._producer is None:
            settings = {
                **self.client_config,
                **PRODUCER_SETTINGS,
                "message.timeout.ms": int(self.timeout_s * 1000),
                "error_cb": self._on_error,
            }
            self._producer = Producer(settings)
        return self._producer

    def _on_error(self, error: KafkaError) -> None:
        self.last_client_error = error.name()

    def topic(self, event: SpooledEvent) -> str:
        return self.topic_prefix + event.stream

    def deliver(self, events: Sequence[SpooledEvent], while_waiting: Callable[[], bool]) -> Outcome:
        producer = self._client()
        outcome = Outcome()
        pending = [0]
        fatal = [False]

        def report(event: SpooledEvent) -> Callable[[KafkaError | None, Message], None]:
            def on_delivery(error: KafkaError | None, _message: Message) -> None:
                pending[0] -= 1
                if error is None:
                    outcome.delivered.add(event.identity)
                elif error.code() in PERMANENT:
                    outcome.rejected[event.identity] = error.name()
                else:
                    fatal[0] = fatal[0] or error.fatal()
                    outcome.error = outcome.error or error.name()

            return on_delivery

        waiting = True
        for event in events:
            while waiting:
                try:
                    producer.produce(
                        self.topic(event), event.value, event.key, headers=event.headers(), on_delivery=report(event)
                    )
                    pending[0] += 1
                    break
                except KafkaException as exc:  # the producer is in a fatal state, or refuses the topic name
                    error = exc.args[0]
                    outcome.error = error.name() if isinstance(error, KafkaError) else "_PRODUCE_FAILED"
                    fatal[0] = True
                    waiting = False
                except BufferError:  # librdkafka's queue is full: let reports drain it
                    producer.poll(0.1)
                    waiting = while_waiting()
            if not waiting:
                break
        # Every report arrives by message.timeout.ms; the margin covers the in-flight request's own timeout.
        deadline = time.monotonic() + self.timeout_s + 30.0
        while waiting and pending[0] > 0 and time.monotonic() < deadline:
            producer.poll(0.2)
            waiting = while_waiting()
        if pending[0] > 0 or fatal[0]:
            outcome.error = outcome.error or "_TIMED_OUT"
            self._discard()
        return outcome

    def _discard(self) -> None:
        """Drop the producer (its queued events stay spooled); the next round makes a new one."""
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.purge()
            producer.flush(0)

    def close(self) -> None:
        self._discard()
