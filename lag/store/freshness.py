"""Per-cluster freshness of the sources' feeds: written by ingestion (each round marks its feed fresh or failing),
read by the evaluator as a `SourceFreshness`, so a cluster whose offsets are stale is UNKNOWN rather than judged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

HWM_FEED = "hwm"
"""The feed every cluster has: ListOffsets rounds. Admin ingestion adds `group-offsets`."""


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class SourceHealth:
    """Per-cluster freshness, fed by the sources: a cluster any of whose feeds (HWM rounds; with admin ingestion
    also committed-offset polls) was not refreshed within `stale_after_s`, or which came back less than
    `recovery_s` ago, is unknown rather than judged (no false STOP after an outage, nor while commits cannot be
    read)."""

    stale_after_s: float
    recovery_s: float
    clock_ms: Callable[[], int] = wall_clock_ms
    _last_ok_ms: dict[tuple[str, str], int] = field(default_factory=dict)
    _recovered_ms: dict[str, int] = field(default_factory=dict)
    _errors: dict[tuple[str, str], str] = field(default_factory=dict)
    _feeds: dict[str, list[str]] = field(default_factory=dict)
    _stopped: dict[tuple[str, str], str] = field(default_factory=dict)

    def expect(self, cluster: str, feed: str) -> None:
        """Require `feed` to be fresh too before `cluster` is judged (the HWM feed is always required)."""
        feeds = self._feeds.setdefault(cluster, [HWM_FEED])
        if feed not in feeds:
            feeds.append(feed)

    def mark_ok(self, cluster: str, feed: str = HWM_FEED) -> None:
        now = self.clock_ms()
        last = self._last_ok_ms.get((cluster, feed))
        if last is not None and now - last > self.stale_after_s * 1000:
            self._recovered_ms[cluster] = now
        self._last_ok_ms[(cluster, feed)] = now
        self._errors.pop((cluster, feed), None)

    def last_ok_ms(self, cluster: str, feed: str = HWM_FEED) -> int | None:
        """When `feed` of `cluster` was last read (ms), None before the first read: the reader's own health."""
        return self._last_ok_ms.get((cluster, feed))

    def mark_error(self, cluster: str, error: str, feed: str = HWM_FEED) -> None:
        self._errors[(cluster, feed)] = error

    def mark_stopped(self, cluster: str, error: str, feed: str) -> None:
        """The feed's reader is gone for good: the cluster is unknown at once, not after `stale_after_s` (by then
        its groups' commits would already look stopped)."""
        self._stopped[(cluster, feed)] = error

    def unavailable_reason(self, cluster: str, now_ms: int) -> str | None:
        for feed in self._feeds.get(cluster, [HWM_FEED]):
            why = self._feed_reason(cluster, feed, now_ms)
            if why is not None:
                return why
        recovered = self._recovered_ms.get(cluster)
        if recovered is not None and now_ms - recovered < self.recovery_s * 1000:
            return f"reachable again {(now_ms - recovered) / 1000:.0f} s ago; waiting {self.recovery_s:g} s"
        return None

    def _feed_reason(self, cluster: str, feed: str, now_ms: int) -> str | None:
        what = "HWM" if feed == HWM_FEED else feed
        stopped = self._stopped.get((cluster, feed))
        if stopped is not None:
            return f"the {what} reader stopped ({stopped})"
        error = self._errors.get((cluster, feed))
        why = f" ({error})" if error is not None else ""
        last = self._last_ok_ms.get((cluster, feed))
        if last is None:
            return f"no {what} read yet{why}"
        if now_ms - last > self.stale_after_s * 1000:
            return f"no {what} refresh for {(now_ms - last) / 1000:.0f} s{why}"
        return None
