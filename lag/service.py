"""The running lag evaluator: one store and evaluator shared by the sources (writers) and the API and metrics
(readers) under one lock, with the wall clock read here and nowhere in the rules.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lag.evaluator import ClusterHealth, Evaluator
from lag.rules import RuleParams
from lag.status import GroupStatus, Mode
from lag.store import OffsetStore


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class LagSettings:
    """Evaluator and store settings (Burrow's names: intervals, min-distance, expire-group, allowed-lag...)."""

    mode: Mode = "enhanced"
    intervals: int = 10
    offset_refresh_s: float = 10.0
    topic_refresh_s: float = 60.0
    min_distance_s: float = 0.0
    allowed_lag: int = 0
    minimum_complete: float = 0.0
    expire_group_s: float = 604_800.0
    hwm_history: int = 60
    group_allow: str | None = None
    group_deny: str | None = None

    def rule_params(self) -> RuleParams:
        return RuleParams(
            mode=self.mode,
            intervals=self.intervals,
            allowed_lag=self.allowed_lag,
            minimum_complete=self.minimum_complete,
            offset_refresh_ms=round(self.offset_refresh_s * 1000),
        )

    def store(self) -> OffsetStore:
        return OffsetStore(
            intervals=self.intervals,
            min_distance_ms=round(self.min_distance_s * 1000),
            hwm_capacity=self.hwm_history,
            expire_group_ms=round(self.expire_group_s * 1000),
            group_allow=self.group_allow,
            group_deny=self.group_deny,
        )


@dataclass
class SourceHealth:
    """Per-cluster freshness, fed by the sources: a cluster whose HWMs were not refreshed within `stale_after_s`,
    or which came back less than `recovery_s` ago, is unknown rather than judged (no false STOP after an outage)."""

    stale_after_s: float
    recovery_s: float
    clock_ms: Callable[[], int] = wall_clock_ms
    _last_ok_ms: dict[str, int] = field(default_factory=dict)
    _recovered_ms: dict[str, int] = field(default_factory=dict)
    _errors: dict[str, str] = field(default_factory=dict)

    def mark_ok(self, cluster: str) -> None:
        now = self.clock_ms()
        last = self._last_ok_ms.get(cluster)
        if last is not None and now - last > self.stale_after_s * 1000:
            self._recovered_ms[cluster] = now
        self._last_ok_ms[cluster] = now
        self._errors.pop(cluster, None)

    def mark_error(self, cluster: str, error: str) -> None:
        self._errors[cluster] = error

    def unavailable_reason(self, cluster: str, now_ms: int) -> str | None:
        last = self._last_ok_ms.get(cluster)
        if last is None:
            return "no HWM read yet" + (f" ({self._errors[cluster]})" if cluster in self._errors else "")
        if now_ms - last > self.stale_after_s * 1000:
            why = f" ({self._errors[cluster]})" if cluster in self._errors else ""
            return f"no HWM refresh for {(now_ms - last) / 1000:.0f} s{why}"
        recovered = self._recovered_ms.get(cluster)
        if recovered is not None and now_ms - recovered < self.recovery_s * 1000:
            return f"reachable again {(now_ms - recovered) / 1000:.0f} s ago; waiting {self.recovery_s:g} s"
        return None


class LagService:
    """Store + evaluator + lock; `api.py` and `metrics.py` read through it, `source.py` writes through it."""

    def __init__(
        self, settings: LagSettings, health: ClusterHealth | None = None, clock_ms: Callable[[], int] = wall_clock_ms
    ) -> None:
        self.settings = settings
        self.store = settings.store()
        self.evaluator = Evaluator(self.store, settings.rule_params(), health)
        self.clock_ms = clock_ms
        self.lock = threading.RLock()
        self.cluster_info: dict[str, dict[str, object]] = {}
        """Per cluster, what `/v3/kafka/{cluster}` shows (servers, refresh intervals)."""

    @contextmanager
    def locked(self) -> Iterator[OffsetStore]:
        with self.lock:
            yield self.store

    def clusters(self) -> list[str]:
        with self.lock:
            return sorted(set(self.store.clusters()) | set(self.cluster_info))

    def group_status(self, cluster: str, group: str) -> GroupStatus:
        with self.lock:
            return self.evaluator.evaluate_group(cluster, group, self.clock_ms())

    def all_statuses(self) -> list[GroupStatus]:
        now = self.clock_ms()
        with self.lock:
            return [s for c in self.store.clusters() for s in self.evaluator.evaluate_cluster(c, now)]
