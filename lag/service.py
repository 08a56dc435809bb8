"""The running lag evaluator: one store and evaluator shared by the sources (writers) and the API, metrics and
notifier (readers) under one lock, with the wall clock read here and nowhere in the rules. Verdicts leave through
`group_status`/`all_statuses`, which add the exact time lag and the page-cache hint to the evaluator's.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from lag.diagnose.page_cache import is_beyond_page_cache
from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.evaluate.timelag import exact_lag_seconds
from lag.protocol import ClusterRows, GroupStatus, PageCacheEstimate, PartitionVerdict, SourceFreshness
from lag.serve.scrape import cluster_rows
from lag.store.freshness import wall_clock_ms
from lag.store.lock import ServiceLock
from lag.store.offsets import OffsetStore
from lag.store.record_times import RecordTimes
from pulse.broker_health import BrokerHealthBoard
from pulse.config import LagConfig


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


def new_evaluator(config: LagConfig, health: SourceFreshness | None = None) -> Evaluator:
    """A store and its evaluator built from the `lag:` section: the one way the service and `lag replay` get theirs."""
    return Evaluator(offset_store(config), rule_params(config), health)


class LagService:
    """Store + evaluator + lock, and the state beside them (page-cache estimates, record counts, exact-lag
    timestamps), all private: the sources write through its `LagWriter` face, the routes, metrics, notifier and
    status page read through its `LagReader` face (lag/store/access.py)."""

    def __init__(
        self,
        settings: LagConfig,
        health: SourceFreshness | None = None,
        clock_ms: Callable[[], int] = wall_clock_ms,
        clusters: Iterable[str] = (),
        broker_health: BrokerHealthBoard | None = None,
    ) -> None:
        """`clusters` are listed (`/v3/kafka`, source up) before their first HWM is stored; `broker_health` is the
        slow-broker detector's board when one runs in this process (`run`): the noisy-neighbour diagnosis."""
        self.settings = settings
        """The `lag:` section this service evaluates with (rule set, window size, filters)."""
        self.evaluator = new_evaluator(settings, health)
        self.store = self.evaluator.store
        self.clock_ms = clock_ms
        self.lock = ServiceLock()
        """Reentrant; the sources apply commits in chunks and let waiting readers in between two (store/lock.py)."""
        self.ready = True
        """`/burrow/admin/ready`: False while a runner is still starting its sources."""
        self._health = health
        self._configured = frozenset(clusters)
        self._broker_health = broker_health
        self._record_times: RecordTimes | None = None
        self._page_cache: dict[str, PageCacheEstimate] = {}
        self._records: dict[str, Counter[str]] = {}

    # -- LagWriter -------------------------------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[OffsetStore]:
        with self.lock:
            yield self.store

    def let_readers_in(self) -> None:
        self.lock.let_waiting_in()

    def count_records(self, cluster: str, counts: Counter[str]) -> None:
        self._records[cluster] = counts

    def set_page_cache(self, cluster: str, estimate: PageCacheEstimate) -> None:
        self._page_cache[cluster] = estimate

    def record_times(self, capacity: int) -> RecordTimes:
        if self._record_times is None:
            self._record_times = RecordTimes(capacity)
        return self._record_times

    # -- LagReader -------------------------------------------------------------------------------------------------

    @property
    def freshness(self) -> SourceFreshness | None:
        return self._health

    def clusters(self) -> list[str]:
        with self.lock:
            return sorted(set(self.store.clusters()) | self._configured)

    def page_caches(self) -> dict[str, PageCacheEstimate]:
        with self.lock:
            return dict(self._page_cache)

    def record_counts(self) -> dict[str, dict[str, int]]:
        with self.lock:
            return {cluster: dict(counts) for cluster, counts in self._records.items()}

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

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]:
        """Every cluster's rows for /metrics at `now_ms`, as arrays (serve/scrape.py), in one pass under the lock."""
        with self.lock:
            return [
                cluster_rows(self.evaluator, cluster, now_ms, self._record_times, self._page_cache.get(cluster))
                for cluster in self.store.clusters()
            ]

    @property
    def broker_health(self) -> BrokerHealthBoard | None:
        return self._broker_health

    def _enrich(self, status: GroupStatus, now_ms: int) -> GroupStatus:
        """Add exact time lag and the page-cache hint, when configured, to the evaluator's verdicts."""
        estimate = self._page_cache.get(status.cluster)
        if (self._record_times is None and estimate is None) or not status.partitions:
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
        if self._record_times is not None:
            ts = self._record_times.get((cluster, v.topic, v.partition, v.end.offset))
            exact = exact_lag_seconds(ts, v.current_lag, now_ms)
        window = beyond = None
        if estimate is not None:
            window = estimate.window_for(v.topic, v.partition)
            beyond = is_beyond_page_cache(exact if exact is not None else v.lag_seconds, window)
        return dataclasses.replace(v, exact_lag_seconds=exact, page_cache_window_s=window, beyond_page_cache=beyond)
