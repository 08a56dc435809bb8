"""Client-side counts (pure, thread-safe): what a producer sent, had acknowledged or failed, and what a consumer
received and processed, per topic and minute of event time, with the latency from the record timestamp; drained
as deltas by the reporter (docs/audit.md, "Client rows")."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from audit.minutes import minute_of
from audit.streams import utc

COUNTS = ("sent", "acknowledged", "failed", "received", "processed")


@dataclass(slots=True)
class Tally:
    """One (topic, minute) since the last drain."""

    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    received: int = 0
    processed: int = 0
    latency_count: int = 0
    latency_sum_s: float = 0.0
    latency_max_s: float | None = None


class ClientCounts:
    """Counters keyed by (topic, minute of the record timestamp). Delivery callbacks and the processing loop
    count; the reporter's thread drains; one lock keeps them apart (a dict update each, never I/O)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[tuple[str, int], Tally] = {}

    def count(self, kind: str, topic: str, ts_ms: int, now_ms: int | None = None) -> None:
        """One record of `kind` (one of COUNTS); with `now_ms`, also its latency from `ts_ms` (acknowledged for
        a producer, processed for a consumer)."""
        key = (topic, minute_of(ts_ms))
        with self._lock:
            tally = self._tallies.get(key)
            if tally is None:
                tally = self._tallies[key] = Tally()
            setattr(tally, kind, getattr(tally, kind) + 1)
            if now_ms is not None:
                latency_s = max(0, now_ms - ts_ms) / 1000
                tally.latency_count += 1
                tally.latency_sum_s += latency_s
                tally.latency_max_s = latency_s if tally.latency_max_s is None else max(tally.latency_max_s, latency_s)

    def drain(self) -> list[dict[str, object]]:
        """The counts since the last drain, one row per (topic, minute), oldest minute first; then zero."""
        with self._lock:
            tallies, self._tallies = self._tallies, {}
        return [
            {
                "topic": topic,
                "minute": utc(minute),
                **{kind: getattr(t, kind) for kind in COUNTS},
                "latency_count": t.latency_count,
                "latency_sum_s": t.latency_sum_s,
                "latency_max_s": t.latency_max_s,
            }
            for (topic, minute), t in sorted(tallies.items(), key=lambda kv: (kv[0][1], kv[0][0]))
        ]
