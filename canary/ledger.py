"""Where the producer, the consumer and the clock meet: the tracker and the availability window behind one lock.

Every settled probe leaves here, in order, to the sinks. Producer callbacks, the consumer thread and the service's
tick all call in; the lock makes them take turns, so the (pure, single-threaded) tracker and window stay simple.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from datetime import datetime

from canary.availability import Availability, AvailabilityWindow, BrokerHealth, Verdict, tally
from canary.events import ProbeResult, SinkFanout
from canary.tracker import PartitionCounts, Tracker
from canary.view import PartitionLeader

_LOG = logging.getLogger(__name__)
VERDICTS_KEPT = 20_000
"""Verdicts remembered for `availability_between` at most (about 5 minutes of 60 partitions probed every second)."""
VERDICTS_KEPT_S = 600.0
"""...and for no longer than this: a small canary's deque took 105 minutes to fill, which read as growth in the
soak (docs/benchmarks.md, "Soak")."""


class Ledger:
    """Thread-safe front of `Tracker` and `AvailabilityWindow`; results go to `sinks` as they settle."""

    def __init__(self, tracker: Tracker, window: AvailabilityWindow, sinks: SinkFanout) -> None:
        self.tracker = tracker
        self.window = window
        self._sinks = sinks
        self._lock = threading.Lock()
        self._verdicts: deque[Verdict] = deque(maxlen=VERDICTS_KEPT)

    def sent(self, partition: int, sequence: int, now: float, sent_at: datetime, leader: PartitionLeader) -> None:
        with self._lock:
            self.tracker.sent(partition, sequence, now, sent_at, leader.broker, leader.rack)
            self.window.sent(partition, sequence, now, leader.broker, leader.in_sync, leader.departed)

    def acked(self, partition: int, sequence: int, offset: int, latency_s: float, now: float) -> None:
        with self._lock:
            self.window.acked(partition, sequence, latency_s)
            self._emit(
                self._watching(
                    partition,
                    "an offset acknowledged again",
                    self.tracker.acked,
                    partition,
                    sequence,
                    offset,
                    latency_s,
                    now,
                )
            )

    def failed(self, partition: int, sequence: int, error: str, now: float) -> None:
        with self._lock:
            self.window.failed(partition, sequence, now)
            self._emit(self.tracker.failed(partition, sequence, error, now))

    def arrived(self, partition: int, sequence: int, offset: int, now: float) -> None:
        with self._lock:
            self._emit(
                self._watching(
                    partition, "an offset read again", self.tracker.arrived, partition, sequence, offset, now
                )
            )

    def offsets_deleted(self, partition: int, log_start: int, now: float) -> None:
        with self._lock:
            self._emit(self.tracker.offsets_deleted(partition, log_start, now))

    def truncated(self, partition: int, high_watermark: int, now: float, acked_before: float | None = None) -> None:
        with self._lock:
            self._emit(
                self._watching(
                    partition,
                    "the reader's position",
                    lambda: self.tracker.truncated(partition, high_watermark, now, acked_before=acked_before),
                )
            )

    def first_unread_offset(self, partition: int) -> int | None:
        with self._lock:
            return self.tracker.first_unread_offset(partition)

    def log_checked(self, partition: int, log_start: int, log_end: int, asked_s: float, now: float) -> None:
        """The partition's log spans [log_start, log_end) as asked at `asked_s`: acknowledged probes outside it are
        gone, deleted before they were read (below the start) or truncated (at or above the end, once confirmed by
        the next check: `Tracker.log_end_seen`)."""
        with self._lock:
            self._emit(self.tracker.offsets_deleted(partition, log_start, now))
            self._emit(
                self._watching(partition, "the log check", self.tracker.log_end_seen, partition, log_end, asked_s, now)
            )

    def tick(self, now: float, health: BrokerHealth) -> dict[int, Availability]:
        """Expire lost probes, give availability verdicts, and return availability per broker."""
        with self._lock:
            self._emit(self.tracker.expire(now))
            self._verdicts.extend(self.window.judge(now, health))
            while self._verdicts and self._verdicts[0].sent_s < now - VERDICTS_KEPT_S:
                self._verdicts.popleft()
            return self.window.availability(now)

    def undecided(self, sent_until: float) -> int:
        with self._lock:
            return self.window.undecided(sent_until)

    def availability_between(self, start_s: float, end_s: float) -> dict[int, Availability]:
        """Availability per broker over the probes sent in [start_s, end_s] (monotonic) that have a verdict; for
        a question about one episode (the span of an outage) rather than the sliding window."""
        with self._lock:
            return tally(v for v in self._verdicts if start_s <= v.sent_s <= end_s)

    def counts(self) -> dict[int, PartitionCounts]:
        with self._lock:
            return {p: PartitionCounts(**vars(c)) for p, c in self.tracker.counts().items()}

    def read(self, query: Callable[[Tracker], int]) -> int:
        with self._lock:
            return query(self.tracker)

    def _watching(
        self, partition: int, how: str, call: Callable[..., list[ProbeResult]], *args: object
    ) -> list[ProbeResult]:
        """Run a tracker call; when it found a truncation, say so in the log with how it was found."""
        before = self.tracker.counts().get(partition)
        truncations = before.truncations if before is not None else 0
        results = call(*args)
        after = self.tracker.counts().get(partition)
        if after is not None and after.truncations > truncations:
            _LOG.warning(
                "canary %s[%d]: log truncated below offset %s, found by %s",
                self.tracker.topic,
                partition,
                after.last_cut,
                how,
            )
        return results

    def _emit(self, results: list[ProbeResult]) -> None:
        for result in results:
            self._sinks.record(result)
