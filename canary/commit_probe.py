"""Offset-commit probe: commit a small group's offset once per interval, timing the group coordinator.

Kept apart from the data-plane consumer, which uses assign() and never commits, so a slow coordinator shows here
and never as end-to-end latency (Strimzi canary #161). Each attempt ends within the probe's timeout and is counted
under a name from canary/commit_outcome.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from canary.commit_outcome import CommitErrorLog, CommitResult, commit_error_message, commit_error_name, is_refusal
from pulse.config import ClusterConfig
from pulse.kafka_log import KafkaLogLimiter
from pulse.profile import client_config

_LOG = logging.getLogger(__name__)
POLL_SLICE_S = 0.1
"""How often a waiting attempt looks at its stop event; the commit's latency is taken in its callback, not here."""


def _error_name(error: Any) -> str | None:
    return str(error.name()) if isinstance(error, KafkaError) else None


class CommitProbe:
    """Commits partition 0's high watermark of the monitor topic for `group` (a group with no members), so the lag
    evaluator sees kafka-pulse's own probe group caught up instead of a consumer that never keeps up."""

    def __init__(
        self,
        cluster: ClusterConfig,
        topic: str,
        group: str,
        timeout_s: float,
        kafka_log: KafkaLogLimiter | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cluster = cluster.name
        self._topic = topic
        self.group = group
        self._offset = 0
        self._timeout_s = timeout_s
        self._monotonic = monotonic
        self._pending = False
        """A commit was sent and its callback has not fired: the next attempt sends none behind it."""
        self._answer: tuple[str | None, tuple[str, ...]] = (None, ())
        self._answered_at = 0.0
        self._refusal: str | None = None
        """The last authorization failure librdkafka reported outside a commit's answer; cleared by an ok."""
        self._errors = CommitErrorLog()
        timeout_ms = max(10, int(timeout_s * 1000))
        self._consumer = Consumer(
            {
                **client_config(cluster),
                "group.id": group,
                "client.id": "kafka-pulse-canary-commit",
                "enable.auto.commit": False,
                "socket.timeout.ms": timeout_ms,
                # The group never has members, so this bounds only the wait for a coordinator: a commit deferred
                # for one fails after it (_WAIT_COORD), and close() waits no longer than it for such a commit
                # (librdkafka's default 45 s made stop() wait out a refused group's commit).
                "session.timeout.ms": timeout_ms,
                "on_commit": self._on_commit,
                # failures are counted by error name; reconnect chatter is thinned and counted
                **(kafka_log or KafkaLogLimiter()).settings(cluster.name, on_error=self._note_error),
            }
        )

    def commit_once(self, stop: threading.Event | None = None) -> CommitResult | None:
        """Commit once and wait for the answer, at most the timeout; None when `stop` was set first (an attempt
        cut short by shutdown is no verdict on the coordinator)."""
        if self._pending:  # the last attempt's commit is still unanswered: wait for it, not for a second one
            started = self._monotonic()
            if not self._await_answer(started + self._timeout_s, stop):
                return self._settle(False, started, stop)
        self._offset = self._high_watermark() or self._offset + 1
        started = self._monotonic()
        self._pending = True
        try:
            self._consumer.commit(offsets=[TopicPartition(self._topic, 0, self._offset)], asynchronous=True)
        except KafkaException as exc:  # refused before it was sent (the client is closing, say)
            self._pending = False
            error = exc.args[0] if exc.args else None
            self._answer = (_error_name(error) or type(exc).__name__, ())
            self._answered_at = self._monotonic()
            return self._settle(True, started, stop)
        return self._settle(self._await_answer(started + self._timeout_s, stop), started, stop)

    def _await_answer(self, deadline: float, stop: threading.Event | None) -> bool:
        """Poll until the pending commit's callback fires (True), `deadline` passes or `stop` is set (False)."""
        while True:
            message = self._consumer.poll(max(0.0, min(POLL_SLICE_S, deadline - self._monotonic())))
            if message is not None and message.error() is not None:
                self._note_error(message.error())  # the group's FindCoordinator refusal arrives here
            if not self._pending:
                return True
            if (stop is not None and stop.is_set()) or self._monotonic() >= deadline:
                return False

    def _settle(self, answered: bool, started: float, stop: threading.Event | None) -> CommitResult | None:
        if not answered and stop is not None and stop.is_set():
            return None
        error, partition_errors = self._answer if answered else (None, ())
        name = commit_error_name(answered, error, partition_errors, self._refusal)
        now = self._monotonic()
        if name is None:
            self._refusal = None
        if self._errors.should_log(name, now) and name is not None:  # called for an ok too: it ends a run
            _LOG.warning(commit_error_message(self._cluster, self.group, self._topic, name, self._timeout_s))
        latency_s = (self._answered_at if answered else now) - started
        return CommitResult(name is None, max(0.0, latency_s), name)

    def _on_commit(self, error: KafkaError | None, partitions: Sequence[TopicPartition]) -> None:
        """librdkafka's offset-commit callback, served by `poll` on the probe's thread."""
        self._answered_at = self._monotonic()
        names = tuple(name for p in partitions if (name := _error_name(p.error)) is not None)
        self._answer = (_error_name(error), names)
        self._pending = False

    def _note_error(self, error: Any) -> None:
        """Keeps an authorization failure reported outside a commit's answer (a consumer error or error_cb)."""
        name = _error_name(error)
        if name is not None and is_refusal(name):
            self._refusal = name

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
        """Closes the client; a commit still waiting for a coordinator holds this up to the timeout at most."""
        self._consumer.close()
