"""The running lag evaluator: one store and evaluator shared by the sources (writers) and the API, metrics and
notifier (readers) under one lock, with the wall clock read here and nowhere in the rules. Verdicts leave through
`group_status`/`all_statuses`, which add the exact time lag and the page-cache hint to the evaluator's.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from lag.diagnose.page_cache import PageCacheEstimate, is_beyond_page_cache
from lag.evaluate.evaluator import ClusterHealth, Evaluator
from lag.evaluate.rules import RuleParams
from lag.evaluate.timelag import exact_lag_seconds
from lag.protocol import GroupStatus, PartitionVerdict
from lag.store.lock import ServiceLock
from lag.store.offsets import OffsetStore
from lag.store.record_times import RecordTimes
from pulse.broker_health import BrokerHealthBoard
from pulse.config import LagConfig

HWM_FEED = "hwm"
"""The feed every cluster has: ListOffsets rounds. Admin ingestion adds `group-offsets`."""


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def rule_params(config: LagConfig) -> RuleParams:
    """The rules' parameters (milliseconds, as the pure rules take them) derived from the `lag:` section."""
    return RuleParams(
        mode=config.mode,
        intervals=config.intervals,
        allowed_lag=config.allowed_lag,
        minimum_complete=config.minimum_complete,
        offset_refresh_ms=round(config.offset_refresh_s * 1000),
    )


def offset_store(config: LagConfig) -> OffsetStore:
    """An empty store sized and filtered as the `lag:` section says."""
    return OffsetStore(
        intervals=config.intervals,
        min_distance_ms=round(config.min_distance_s * 1000),
        hwm_capacity=config.hwm_history,
        expire_group_ms=round(config.expire_group_s * 1000),
        group_allow=config.effective_group_allow(),
        group_deny=config.group_deny,
    )


def new_evaluator(config: LagConfig, health: ClusterHealth | None = None) -> Evaluator:
    """A store and its evaluator built from the `lag:` section: the one way the service and `lag replay` get theirs."""
    return Evaluator(offset_store(config), rule_params(config), health)


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


class LagService:
    """Store + evaluator + lock; the routes, the metrics and the notifier read through it, the sources write."""

    def __init__(
        self, settings: LagConfig, health: ClusterHealth | None = None, clock_ms: Callable[[], int] = wall_clock_ms
    ) -> None:
        self.settings = settings
        """The `lag:` section this service evaluates with (rule set, window size, filters)."""
        self.evaluator = new_evaluator(settings, health)
        self.store = self.evaluator.store
        self.health = health
        self.clock_ms = clock_ms
        self.lock = ServiceLock()
        """Reentrant; the sources apply commits in chunks and let waiting readers in between two (store/lock.py)."""
        self.ready = True
        """`/burrow/admin/ready`: False while a runner is still starting its sources."""
        self.cluster_info: dict[str, dict[str, Any]] = {}
        """Per cluster, Burrow's cluster module detail (`/v3/kafka/{cluster}`, `/v3/config/cluster/{name}`)."""
        self.consumer_info: dict[str, dict[str, Any]] = {}
        """Per cluster, Burrow's consumer module detail (`/v3/config/consumer/{name}`)."""
        self.notifier_info: dict[str, dict[str, Any]] = {}
        """Notifier modules by name (`/v3/config/notifier/{name}`)."""
        self.main_config: dict[str, Any] = {}
        """Burrow's `/v3/config` sections (general, logging, zookeeper, httpserver)."""
        self.record_times: RecordTimes | None = None
        """Exact time lag on: timestamps of the records at committed offsets, filled by `ingest/exact_lag.py`."""
        self.page_cache: dict[str, PageCacheEstimate] = {}
        """Page-cache hint on: per cluster, refreshed by the source after each HWM round."""
        self.decoded: dict[str, Counter[str]] = {}
        """Per cluster, `__consumer_offsets` records read by decoded kind (a source's own counter)."""
        self.broker_health: BrokerHealthBoard | None = None
        """The slow-broker detector's board when one runs in this process (`run`): the noisy-neighbour diagnosis."""

    @contextmanager
    def locked(self) -> Iterator[OffsetStore]:
        with self.lock:
            yield self.store

    def clusters(self) -> list[str]:
        with self.lock:
            return sorted(set(self.store.clusters()) | set(self.cluster_info))

    def group_status(self, cluster: str, group: str, now_ms: int | None = None) -> GroupStatus:
        now = self.clock_ms() if now_ms is None else now_ms
        with self.lock:
            return self._enrich(self.evaluator.evaluate_group(cluster, group, now), now)

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]:
        """Every group of every cluster, evaluated at `now_ms` (default: the clock), which the evaluation log
        stamps its rows with."""
        now = self.clock_ms() if now_ms is None else now_ms
        with self.lock:
            return [
                self._enrich(s, now) for c in self.store.clusters() for s in self.evaluator.evaluate_cluster(c, now)
            ]

    def _enrich(self, status: GroupStatus, now_ms: int) -> GroupStatus:
        """Add exact time lag and the page-cache hint, when configured, to the evaluator's verdicts."""
        estimate = self.page_cache.get(status.cluster)
        if (self.record_times is None and estimate is None) or not status.partitions:
            return status
        partitions = tuple(self._enrich_partition(status.cluster, v, estimate, now_ms) for v in status.partitions)
        exact = [v.exact_lag_seconds for v in partitions if v.exact_lag_seconds is not None]
        beyond = [v.beyond_page_cache for v in partitions if v.beyond_page_cache is not None]
        maxlag = status.maxlag
        if maxlag is not None:
            maxlag = next((v for v in partitions if (v.topic, v.partition) == (maxlag.topic, maxlag.partition)), maxlag)
        return dataclasses.replace(
            status,
            partitions=partitions,
            maxlag=maxlag,
            exact_lag_seconds=max(exact) if exact else None,
            beyond_page_cache=any(beyond) if beyond else None,
        )

    def _enrich_partition(
        self, cluster: str, v: PartitionVerdict, estimate: PageCacheEstimate | None, now_ms: int
    ) -> PartitionVerdict:
        if v.end is None:
            return v
        exact = None
        if self.record_times is not None:
            ts = self.record_times.get((cluster, v.topic, v.partition, v.end.offset))
            exact = exact_lag_seconds(ts, v.current_lag, now_ms)
        window = beyond = None
        if estimate is not None:
            window = estimate.window_for(v.topic, v.partition)
            beyond = is_beyond_page_cache(exact if exact is not None else v.lag_seconds, window)
        return dataclasses.replace(v, exact_lag_seconds=exact, page_cache_window_s=window, beyond_page_cache=beyond)
