"""The two ways the stages reach the running service (`lag.service.LagService` has both): ingestion writes through
a `LagWriter`, the outputs (routes, /metrics, notifier, status page) read through a `LagReader`. Each is all its
side may touch, so no stage fills or reads the service's state behind the other's back (STYLE §3: no bag).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from lag.protocol import ClusterRows, GroupStatus, PageCacheEstimate, SourceFreshness
from lag.store.offsets import OffsetStore
from lag.store.record_times import RecordTimes
from pulse.broker_health import BrokerHealthBoard
from pulse.config import LagConfig


class LagWriter(Protocol):
    """What a source writes: commits and HWMs into the store (under the lock), the page-cache estimate, its record
    counts and the exact-lag timestamps."""

    @property
    def settings(self) -> LagConfig: ...

    @property
    def clock_ms(self) -> Callable[[], int]: ...

    def locked(self) -> AbstractContextManager[OffsetStore]:
        """The store, held under the service lock for the `with` block."""

    def let_readers_in(self) -> None:
        """Between two chunks of writes: a reader waiting for the lock goes first (store/lock.py)."""

    def count_records(self, cluster: str, counts: Counter[str]) -> None:
        """The source's own count of `__consumer_offsets` records read, by decoded kind (exported on /metrics)."""

    def set_page_cache(self, cluster: str, estimate: PageCacheEstimate) -> None:
        """The cluster's page-cache windows after an HWM round (call under the lock)."""

    def record_times(self, capacity: int) -> RecordTimes:
        """The exact-lag timestamps cache, made with `capacity` on first use; write it under the lock."""


class LagReader(Protocol):
    """What the outputs read: verdicts (one group, every group, or a scrape's rows), the clusters and their
    freshness, and the store for Burrow's listing routes (under the lock)."""

    @property
    def settings(self) -> LagConfig: ...

    @property
    def clock_ms(self) -> Callable[[], int]: ...

    @property
    def ready(self) -> bool:
        """False while the sources are still starting (`/burrow/admin/ready`)."""

    @property
    def freshness(self) -> SourceFreshness | None: ...

    @property
    def broker_health(self) -> BrokerHealthBoard | None: ...

    def locked(self) -> AbstractContextManager[OffsetStore]: ...

    def clusters(self) -> list[str]: ...

    def group_status(self, cluster: str, group: str, now_ms: int | None = None) -> GroupStatus: ...

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]: ...

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]: ...

    def group_statuses(self, cluster: str, groups: Sequence[str], now_ms: int) -> list[GroupStatus]:
        """`group_status` of each of `groups` at `now_ms`, in their order, in one pass (a few picked from rows)."""

    def page_caches(self) -> Mapping[str, PageCacheEstimate]:
        """Per cluster, the latest page-cache estimate (a copy)."""

    def record_counts(self) -> Mapping[str, Mapping[str, int]]:
        """Per cluster, `__consumer_offsets` records read by decoded kind (a copy)."""

    def dropped_groups(self) -> Mapping[str, Mapping[str, int]]:
        """Per cluster and reason (`name_too_long`, `too_many_groups`), records of groups refused at ingestion."""
