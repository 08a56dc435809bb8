"""The running lag evaluator: one store and evaluator shared by the sources (writers) and the API, metrics and
notifier (readers) under one lock, with the wall clock read here and nowhere in the rules. Verdicts leave through
`group_status`/`group_statuses`/`all_statuses`/`scrape_rows`, enriched once by `lag/diagnose/enrich.py` (exact time
lag, page-cache hint, noisy neighbours).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from lag.diagnose.enrich import Evidence, enrich_status
from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.protocol import ClusterRows, GroupStatus, PageCacheEstimate, SourceFreshness
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
        max_group_name_bytes=config.max_group_name_bytes,
        max_groups=config.max_groups,
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

    def dropped_groups(self) -> dict[str, dict[str, int]]:
        with self.lock:
            out: dict[str, dict[str, int]] = {}
            for (cluster, reason), n in sorted(self.store.admission.dropped.items()):
                out.setdefault(cluster, {})[reason] = n
            return out

    def group_status(self, cluster: str, group: str, now_ms: int | None = None) -> GroupStatus:
        now = self.clock_ms() if now_ms is None else now_ms
        with self.lock:
            return enrich_status(self.evidence(cluster), self.evaluator.evaluate_group(cluster, group, now), now)

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]:
        """Every group of every cluster, evaluated at `now_ms` (default: the clock), which the evaluation log
        stamps its rows with."""
        now = self.clock_ms() if now_ms is None else now_ms
        with self.lock:
            out: list[GroupStatus] = []
            for cluster in self.store.clusters():
                evidence = self.evidence(cluster)
                out += (enrich_status(evidence, s, now) for s in self.evaluator.evaluate_cluster(cluster, now))
            return out

    def group_statuses(self, cluster: str, groups: Sequence[str], now_ms: int) -> list[GroupStatus]:
        """`group_status` of each of `groups` at `now_ms`, in one columnar pass under the lock: the objects of the
        few groups a reader picked from `scrape_rows` (cost in the groups named, not in the groups stored)."""
        with self.lock:
            evidence = self.evidence(cluster)
            return [enrich_status(evidence, s, now_ms) for s in self.evaluator.evaluate_named(cluster, groups, now_ms)]

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]:
        """Every cluster's rows for /metrics at `now_ms`, as arrays (serve/scrape.py), in one pass under the lock."""
        with self.lock:
            return [cluster_rows(self.evaluator, c, now_ms, self.evidence(c)) for c in self.store.clusters()]

    @property
    def broker_health(self) -> BrokerHealthBoard | None:
        return self._broker_health

    def evidence(self, cluster: str) -> Evidence:
        """What the enrichment of `cluster`'s verdicts reads (call under the lock)."""
        estimate = self._page_cache.get(cluster)
        board = self._broker_health
        brokers = board.snapshot(cluster) if board is not None and estimate is not None else None
        return Evidence(self._record_times, estimate, brokers)
