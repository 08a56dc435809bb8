"""Group name -> group id within one cluster, for `offsets.py`: an open-addressing table of int32 ids placed by the
names' hashes and checked against the store's id -> name list, which holds the names already; and which names are
admitted at all (`GroupAdmission`: the name and count bounds and the allow/deny filter, judged once per name).

Why not a dict: a dict entry (about 32 B resident) and the `int` object of its id (32 B) were a fifth of a group of
one partition at 1,000,000 groups; here a group costs one int32 slot at a load of at most one half, 4-8 B
(docs/benchmarks.md). A probe is a few Python-level reads, dearer than a dict's, so the groups found most
recently are also kept in a small bounded dict (`HOT_GROUPS`): a group committing again, the common case of a small
cluster, pays no probe, while a million groups still cost their int32 slots. Readers that want every group take the
ids as an array (`ids`), never a lookup per name.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

EMPTY = -1
"""A slot never used since the last rehash: a probe stops here."""
DELETED = -2
"""A slot whose group was removed: a probe goes on past it, an insertion may take it."""
_MIN_SLOTS = 8
HOT_GROUPS = 4096
"""Groups whose id is kept in the index's dict of recent finds, at most (about 70 B each, the name not copied):
every group of a small cluster, and a bounded cost at a million groups, where the dict is emptied when full."""


class GroupIndex:
    """The ids of one cluster's groups by name; `names` is the store's id -> name list (None for a free id), which
    must name an id for as long as the id is in the index (add after naming it, remove before forgetting it)."""

    def __init__(self, names: Sequence[str | None], hot_size: int = HOT_GROUPS) -> None:
        self._names = names
        self._hot: dict[str, int] = {}
        """Name -> id of groups found or added lately, at most `hot_size` (keyed by the name `names` holds)."""
        self._hot_size = hot_size
        self.probes = 0
        """Walks of the table for a name not in the dict of recent finds (the path a re-commit must not take)."""
        self._slots = array("i", [EMPTY]) * _MIN_SLOTS
        self._mask = _MIN_SLOTS - 1
        self._live = 0
        self._used = 0
        """Slots not EMPTY (live and deleted): what bounds a probe's length."""
        self._order: array[int] | None = None
        """The ids in their names' order, kept until a group is added or removed (4 B a group)."""

    def __len__(self) -> int:
        return self._live

    def get(self, name: str) -> int | None:
        """The group's id, None when the cluster has no such group."""
        gid = self._hot.get(name)
        if gid is not None:
            return gid
        gid = self._probe(name)
        if gid is not None:
            self._remember(gid)
        return gid

    def _remember(self, gid: int) -> None:
        hot = self._hot
        if len(hot) >= self._hot_size:
            hot.clear()  # a new generation: cheaper than tracking recency, and the active groups come back
        hot[self._names[gid]] = gid  # type: ignore[index]  # an indexed id is always named

    def _probe(self, name: str) -> int | None:
        """The id by a walk of the table from the name's hash."""
        self.probes += 1
        slots, names, mask = self._slots, self._names, self._mask
        i = hash(name) & mask
        while True:
            gid = slots[i]
            if gid == EMPTY:
                return None
            if gid >= 0 and names[gid] == name:
                return gid
            i = (i + 1) & mask

    def add(self, name: str, gid: int) -> None:
        """Index a group not in the index yet (the caller checked with `get`) under the id that `names` gives it."""
        if (self._used + 1) * 2 > len(self._slots):
            self._rehash(self._live + 1)
        slots, mask = self._slots, self._mask
        i = hash(name) & mask
        while slots[i] >= 0:
            i = (i + 1) & mask
        if slots[i] == EMPTY:
            self._used += 1
        slots[i] = gid
        self._live += 1
        self._order = None
        self._remember(gid)

    def remove(self, name: str) -> int | None:
        """Unindex a group; its id, None when it was not there."""
        self._hot.pop(name, None)
        slots, names, mask = self._slots, self._names, self._mask
        i = hash(name) & mask
        while True:
            gid = slots[i]
            if gid == EMPTY:
                return None
            if gid >= 0 and names[gid] == name:
                slots[i] = DELETED
                self._live -= 1
                self._order = None
                return gid
            i = (i + 1) & mask

    def ids(self) -> NDArray[np.int64]:
        """Every id in the index, in increasing order (ids are handed out in order of arrival, as a dict's
        insertion order was)."""
        table = np.frombuffer(self._slots, dtype=np.int32)
        return np.sort(table[table >= 0]).astype(np.int64)

    def in_name_order(self) -> array[int]:
        """Every id in its name's order, sorted once and kept while the groups stay the same: names arrive in no
        order on a real cluster, and sorting a million of them costs every scrape about half a second of CPU."""
        if self._order is None:
            ids = self.ids().tolist()
            ids.sort(key=self._names.__getitem__)
            self._order = array("i", ids)
        return self._order

    def _rehash(self, live: int) -> None:
        """A new table with room for `live` ids at a load of at most one half (deleted slots dropped), filled a
        round at a time: each id not placed yet takes its current slot if free and no earlier id claims it, else
        moves on to the next, so every id sits where a probe from its hash finds it."""
        size = len(self._slots)
        while live * 2 > size:
            size *= 2
        gids = self.ids()
        names = self._names
        where = np.fromiter((hash(names[g]) for g in gids.tolist()), dtype=np.int64, count=len(gids)) & (size - 1)
        table = np.full(size, EMPTY, dtype=np.int32)
        pending = np.arange(len(gids))
        while len(pending):
            slots, first = np.unique(where[pending], return_index=True)
            free = table[slots] == EMPTY
            placed = pending[first[free]]
            table[where[placed]] = gids[placed]
            left = np.ones(len(pending), dtype=np.bool_)
            left[first[free]] = False
            pending = pending[left]
            where[pending] = (where[pending] + 1) & (size - 1)
        self._slots = array("i", table.tobytes())
        self._mask = size - 1
        self._used = self._live = len(gids)


NAME_TOO_LONG = "name_too_long"
TOO_MANY_GROUPS = "too_many_groups"
DECISIONS_KEPT = 16_384
"""Names whose filter decision is remembered; at most `max_name_bytes` each (16 MiB at the 1 KiB default)."""


class GroupAdmission:
    """Which group names the store takes: a name within `max_name_bytes` (UTF-8) that Burrow's allow/deny regexes
    accept, and a new group only while its cluster has fewer than `max_groups`. Group ids are data from Kafka: the
    regexes run once per name (an LRU of decisions), never per commit, and every refusal is counted by cluster and
    reason (`kafka_pulse_lag_groups_dropped_total`)."""

    def __init__(
        self,
        allow: str | None = None,
        deny: str | None = None,
        max_name_bytes: int = 1024,
        max_groups: int = 1_000_000,
        decisions_kept: int = DECISIONS_KEPT,
    ) -> None:
        self.max_name_bytes = max_name_bytes
        self.max_groups = max_groups
        self._allow = re.compile(allow) if allow else None
        self._deny = re.compile(deny) if deny else None
        self.passes: Callable[[str], bool] = (
            lru_cache(maxsize=decisions_kept)(self._search) if allow or deny else _everyone
        )
        """Burrow's filter: unanchored search, allow must match and deny not; remembered per name."""
        self.judged = 0
        """Times the regexes ran: once per name while its decision is remembered."""
        self.dropped: Counter[tuple[str, str]] = Counter()
        """(cluster, reason) -> records of groups refused (`NAME_TOO_LONG`, `TOO_MANY_GROUPS`)."""

    def fits(self, group: str) -> bool:
        """The name is within `max_name_bytes` (checked without encoding when its length alone decides)."""
        limit = self.max_name_bytes
        if len(group) > limit:
            return False
        return len(group) * 4 <= limit or len(group.encode("utf-8", "surrogatepass")) <= limit

    def accepts(self, group: str) -> bool:
        """Within the name bound and through the filter (Burrow's: unanchored search, allow must match, deny not)."""
        return self.fits(group) and self.passes(group)

    def refuse(self, cluster: str, reason: str) -> None:
        self.dropped[(cluster, reason)] += 1

    def _search(self, group: str) -> bool:
        self.judged += 1
        if self._allow is not None and not self._allow.search(group):
            return False
        return not (self._deny is not None and self._deny.search(group))


def _everyone(group: str) -> bool:
    return True
