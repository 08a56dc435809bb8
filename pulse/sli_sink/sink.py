"""`SliSink`: SLI rows to a Kafka topic per stream, the kafka-agent way (DESIGN "Reliability rules"): the producing
side only hands rows to a bounded in-memory queue; one thread writes them to the on-disk spool, then delivers the
spool's head with an idempotent producer and removes what the cluster acknowledged. While the cluster is away the
events wait on disk, in order, across restarts.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, Self

import pyarrow as pa

from pulse.config import ClusterConfig, SliSinkConfig
from pulse.errors import ConfigError
from pulse.private_files import LOCK, make_private_dir, open_private
from pulse.profile import client_config
from pulse.sli_sink.deliver import Delivery, KafkaDelivery, Outcome
from pulse.sli_sink.encode import SpooledEvent, Stream, events_of
from pulse.sli_sink.queue import EventSpool, HandOff

_LOG = logging.getLogger(__name__)

OWNER_LOCK = "owner.lock"
"""Held (flock) by the one sink that delivers from a spool directory; a second one refuses to start."""

DropReason = Literal["queue_full", "spool_full", "spool_error", "corrupt", "rejected"]
DROP_REASONS: tuple[DropReason, ...] = ("queue_full", "spool_full", "spool_error", "corrupt", "rejected")
"""Why events are lost, the `reason` label's whole set:
- `queue_full`: the in-memory hand-off was full (the thread fell behind); the offered rows, newest first.
- `spool_full`: the spool reached `spool_max_bytes`; its oldest events.
- `spool_error`: the spool could not be written (disk full, permissions).
- `corrupt`: unreadable spool lines (a crash mid-write, an edited file).
- `rejected`: the cluster refused the event for good (too large, invalid record)."""

MAX_ROUND = 10_000
"""Events produced per delivery round at most."""


class SliPublisher(Protocol):
    """The one call a component makes: hand rows over without waiting (`SliSink.offer`)."""

    def offer(self, stream: Stream, table: pa.Table) -> bool: ...


class SpoolInUse(ConfigError):
    """Another sink (another process) already delivers from this spool directory: two deliverers of one spool
    would send its events twice."""


@dataclass
class SliSinkStats:
    """Running totals, copied under the lock by `stats()`; the metrics collector reads them."""

    queued: int = 0
    """Events written to the on-disk spool."""
    delivered: int = 0
    """Events the cluster acknowledged (acks=all)."""
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    delivery_errors: int = 0
    """Delivery rounds that ended with an error (the events they did not deliver stay spooled)."""
    rounds: int = 0
    """Delivery rounds finished."""
    in_round: bool = False
    """A delivery round is under way (waiting on the cluster)."""
    handoff_rows: int = 0
    spool_events: int = 0
    spool_bytes: int = 0
    last_delivery_unix_s: float | None = None
    last_error: str | None = None


class SliSink:
    """One per spool directory (and so per process and component); thread-safe `offer`. `start`, `offer` from any
    thread, `stop`. Delivery is in spool order; at least once across a crash (identified by `kp-source`/`kp-seq`),
    exactly once within a run (idempotent producer)."""

    def __init__(
        self,
        spool_dir: Path,
        delivery: Delivery,
        *,
        queue_size: int = 100_000,
        spool_max_bytes: int = 64 << 20,
        retry_after_s: float = 10.0,
        spool_interval_s: float = 0.5,
    ) -> None:
        self.spool_dir = spool_dir
        self.delivery = delivery
        self.retry_after_s = retry_after_s
        """After a failed round, the next waits this long (events keep going to the spool meanwhile)."""
        self.spool_interval_s = spool_interval_s
        """How often the thread moves the hand-off to the spool when there is nothing to deliver."""
        self.handoff = HandOff(queue_size)
        self.spool = EventSpool(spool_dir, spool_max_bytes)
        self.source = uuid.uuid4().hex[:8]
        self._seq = 0
        self._stats = SliSinkStats()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._owner_fd: int | None = None
        self._retry_at = 0.0
        self._stop_deadline = 0.0
        self._next_spool_at = 0.0

    @classmethod
    def from_config(cls, config: SliSinkConfig, cluster: ClusterConfig, spool_dir: Path) -> SliSink:
        """The sink `sli_sink` describes, publishing to `cluster` (the caller resolves `sli_sink.cluster`), its
        spool in `spool_dir`; not started."""
        delivery = KafkaDelivery(client_config(cluster), config.topic_prefix, config.delivery_timeout_s)
        return cls(
            spool_dir,
            delivery,
            queue_size=config.queue_size,
            spool_max_bytes=config.spool_max_bytes,
            retry_after_s=config.retry_after_s,
        )

    # ---- the producing side: never blocks ---------------------------------------------------------

    def offer(self, stream: Stream, table: pa.Table) -> bool:
        """Hand the rows over; when they do not fit the hand-off they are dropped and counted (`queue_full`)."""
        if self.handoff.offer(stream, table):
            return True
        with self._lock:
            self._stats.dropped["queue_full"] += table.num_rows
        return False

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Take the spool directory (SpoolInUse when another sink has it) and start the thread."""
        if self._thread is not None:
            return self
        make_private_dir(self.spool_dir)
        fd = open_private(self.spool_dir / OWNER_LOCK, LOCK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise SpoolInUse(
                    f"sli_sink.spool_dir: {self.spool_dir}: another SLI sink delivers from this spool; "
                    "give each process its own spool_dir"
                ) from None
            raise
        self._owner_fd = fd
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="SLI sink", daemon=True)
        self._thread.start()
        return self

    def stop(self, grace_s: float = 5.0, timeout_s: float = 30.0) -> None:
        """Spool what was handed over, deliver for at most `grace_s` more, and end; what is undelivered stays
        spooled for the next start."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop_deadline = time.monotonic() + grace_s
        self._stopping.set()
        thread.join(timeout_s)
        if thread.is_alive():
            _LOG.error("SLI sink: the thread did not end within %.0f s", timeout_s)
        if self._owner_fd is not None:
            os.close(self._owner_fd)  # releases the flock
            self._owner_fd = None

    def stats(self) -> SliSinkStats:
        with self._lock:
            snapshot = SliSinkStats(**{**self._stats.__dict__, "dropped": dict(self._stats.dropped)})
        snapshot.handoff_rows = self.handoff.rows
        return snapshot

    # ---- the sink's thread --------------------------------------------------------------------------

    def _run(self) -> None:
        self._refresh_spool_stats(read=True)
        while not self._stopping.is_set():
            self._spool_handoff()
            if self._may_deliver():
                self._round()
            if not self._may_deliver():  # a backlog goes on at once; otherwise gather rows for a while
                self._stopping.wait(self.spool_interval_s)
        self._spool_handoff(force=True)
        if self._may_deliver():
            self._round()
        self.delivery.close()

    def _may_deliver(self) -> bool:
        return self.spool.entries > 0 and time.monotonic() >= self._retry_at

    def _keep_waiting(self) -> bool:
        """Between polls of a round: spool what was handed over; False once `stop` has waited long enough."""
        self._spool_handoff()
        return not (self._stopping.is_set() and time.monotonic() >= self._stop_deadline)

    def _spool_handoff(self, force: bool = False) -> None:
        """Move everything handed over to the end of the spool, numbered in order. While the spool is full, every
        append rewrites it whole (dropping its oldest events), so then rows gather in the hand-off for
        `retry_after_s` between appends instead of a rewrite every `spool_interval_s`."""
        if not force and time.monotonic() < self._next_spool_at:
            return
        offered = self.handoff.take()
        if not offered:
            return
        events: list[SpooledEvent] = []
        for item in offered:
            events += events_of(item.stream, item.table, self.source, self._seq + len(events))
        self._seq += len(events)
        try:
            with self.spool.locked():
                trimmed = self.spool.append(events, datetime.now(UTC))
        except OSError as exc:
            _LOG.error("SLI sink: cannot write the spool %s: %s; %d events dropped", self.spool.path, exc, len(events))
            with self._lock:
                self._stats.dropped["spool_error"] += len(events)
            return
        with self._lock:
            self._stats.queued += len(events)
            self._stats.dropped["spool_full"] += trimmed.overflow
            self._stats.dropped["corrupt"] += len(trimmed.corrupt)
        if trimmed.overflow:
            self._next_spool_at = time.monotonic() + self.retry_after_s
        self._refresh_spool_stats()

    def _round(self) -> None:
        """Deliver the spool's head; remove what was acknowledged or refused for good."""
        try:
            with self.spool.locked():
                contents = self.spool.read()
        except OSError as exc:
            _LOG.error("SLI sink: cannot read the spool %s: %s", self.spool.path, exc)
            self._retry_at = time.monotonic() + self.retry_after_s
            return
        head = contents.alerts[:MAX_ROUND]
        with self._lock:
            self._stats.in_round = True
        try:
            outcome = self.delivery.deliver(head, self._keep_waiting) if head else Outcome()
        finally:
            with self._lock:
                self._stats.in_round = False
        self._settle(outcome, corrupt=len(contents.corrupt))

    def _settle(self, outcome: Outcome, corrupt: int) -> None:
        gone = outcome.delivered | set(outcome.rejected)
        try:
            with self.spool.locked():
                held = self.spool.read()  # the hand-off may have appended during the round
                corrupt = max(corrupt, len(held.corrupt))
                if gone or held.corrupt:
                    self.spool.replace([e for e in held.alerts if e.identity not in gone], datetime.now(UTC))
        except OSError as exc:  # delivered events stay spooled and go again: at least once
            _LOG.error("SLI sink: cannot rewrite the spool %s: %s", self.spool.path, exc)
        with self._lock:
            s = self._stats
            s.rounds += 1
            s.delivered += len(outcome.delivered)
            s.dropped["rejected"] += len(outcome.rejected)
            s.dropped["corrupt"] += corrupt
            if outcome.delivered:
                s.last_delivery_unix_s = time.time()
            if outcome.error is not None:
                s.delivery_errors += 1
                if s.last_error is None:  # one line per failure streak
                    _LOG.warning("SLI sink: delivery failed (%s); events stay spooled", outcome.error)
                s.last_error = outcome.error
            elif s.last_error is not None:
                _LOG.info("SLI sink: delivering again")
                s.last_error = None
        for identity, name in list(outcome.rejected.items())[:3]:
            _LOG.warning("SLI sink: event %s:%d refused for good: %s", *identity, name)
        if outcome.error is not None:
            self._retry_at = time.monotonic() + self.retry_after_s
        if gone:
            self._next_spool_at = 0.0  # room again: the hand-off goes to the spool at once
        self._refresh_spool_stats()

    def _refresh_spool_stats(self, read: bool = False) -> None:
        if read:
            with contextlib.suppress(OSError), self.spool.locked():
                self.spool.read()
        with self._lock:
            self._stats.spool_events = self.spool.entries
            self._stats.spool_bytes = self.spool.size_bytes()
