"""The offset store: which groups, topics and partitions exist, routed onto the array windows of `windows.py`.

Ingestion (`source.py`, `replay.py`) calls `add_hwm` and `add_commit`; the evaluator reads a group's slots, one group at
a time (`slots`) or every group of a cluster at once (`runs`). The acceptance rules are Burrow's (`addConsumerOffset` in
`core/internal/storage/inmemory.go`): a commit older than `expire-group` is dropped, a filtered group is dropped, and a
commit for a topic or partition with no HWM sample yet is dropped (its lag could not be computed); every drop is counted
by reason so that nothing disappears silently.

Index layout, chosen so that a million group-partitions cost little beyond their windows: a group is an integer id
(an int32 slot per cluster/group name in a `GroupIndex`, no dict entry or `int` object per group), a group/topic is
a *run* (a contiguous range of window slots, one per partition) kept in flat arrays and chained per group, and
topics are the HWM store's interned topic ids. Owners
(from group metadata) live in a dict only for groups that have any. The per-group and per-run arrays are as narrow
as their values allow (a group's last commit time in int32 ms from an epoch, a run's topic id and partitions in
uint16), widened for good when a value does not fit, as the windows are (`arrays.py`).
"""

from __future__ import annotations

import enum
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lag.store.arrays import fitting_epoch
from lag.store.group_index import NAME_TOO_LONG, TOO_MANY_GROUPS, GroupAdmission, GroupIndex
from lag.store.windows import CommitWindows, HwmWindows


class Ingest(enum.Enum):
    """What became of one commit."""

    STORED = "stored"
    MERGED = "merged"
    """Stored over the previous cell (min-distance)."""
    EXPIRED = "expired"
    """Older than expire-group."""
    FILTERED = "filtered"
    """Group rejected by the allow/deny regexes."""
    NAME_TOO_LONG = "name_too_long"
    """Group id longer than `lag.max_group_name_bytes`."""
    TOO_MANY_GROUPS = "too_many_groups"
    """A new group while the cluster holds `lag.max_groups`."""
    NO_TOPIC = "no_topic"
    NO_PARTITION = "no_partition"
    NO_HWM = "no_hwm"


_INGEST = tuple(Ingest)
_STORED, _MERGED, _EXPIRED, _FILTERED, _NAME_TOO_LONG, _TOO_MANY_GROUPS, _NO_TOPIC, _NO_PARTITION, _NO_HWM = range(
    len(_INGEST)
)
_NONE = -1
"""End of a run chain / no run."""
_WIDE_GROUP_RUNS = 8
"""A group with more topics than this gets a topic -> run dict instead of walking its chain."""
_U16_MAX = 65535
"""Topic ids and partition counts of runs are uint16 until one is larger (then int32 for good)."""
_NO_RECENT: tuple[str, str | None, int] = ("", None, -1)
"""No last commit (no group name equals None)."""


@dataclass(frozen=True, slots=True)
class PartitionSlot:
    """Where one group-partition's window lives (`slot` indexes `OffsetStore.commits`)."""

    topic: str
    partition: int
    slot: int
    owner: str
    client_id: str


class OffsetStore:
    """Commit windows per cluster/group/topic/partition and HWM windows per cluster/topic/partition."""

    def __init__(
        self,
        intervals: int = 10,
        min_distance_ms: int = 0,
        hwm_capacity: int | None = None,
        expire_group_ms: int = 604_800_000,
        group_allow: str | None = None,
        group_deny: str | None = None,
        max_group_name_bytes: int = 1024,
        max_groups: int = 1_000_000,
    ) -> None:
        self.intervals = intervals
        self.commits = CommitWindows(intervals, min_distance_ms)
        self.hwms = HwmWindows(max(intervals, hwm_capacity or 0))
        self.expire_group_ms = expire_group_ms
        self.admission = GroupAdmission(group_allow, group_deny, max_group_name_bytes, max_groups)
        """Which group ids are stored at all (name and count bounds, the filter once per name), and the drops."""
        self._counts = [0] * len(_INGEST)
        # groups: cluster -> name -> id; per id its name, last commit time and first run
        self._gids: dict[str, GroupIndex] = {}
        self._group_names: list[str | None] = []
        self._free_gids: list[int] = []
        self._recent = _NO_RECENT
        """(cluster, group, id) of the last commit stored: the records of one group's commit come one after another
        in `__consumer_offsets`, and a string compare is cheaper than a probe of the `GroupIndex`."""
        self._last_commit = array("i")
        """Per group id: its newest commit's timestamp less `_last_epoch_ms`."""
        self._last_epoch_ms = 0
        self._first_run = array("i")
        self._wide: dict[int, dict[int, int]] = {}
        """Group id -> topic id -> run, for groups with many topics."""
        self._owners: dict[int, dict[tuple[str, int], tuple[str, str]]] = {}
        """Group id -> (topic, partition) -> (owner host, client id), from group metadata; absent when unknown."""
        self._early_owners: dict[tuple[str, str], dict[tuple[str, int], tuple[str, str]]] = {}
        """Owners of groups with no stored commit yet (members join before they commit); taken over by the group."""
        self._members: dict[tuple[str, str], int] = {}
        """(cluster, group) -> members, from group metadata or DescribeConsumerGroups; absent when unknown."""
        self._share_groups: dict[str, set[str]] = {}
        """Cluster -> share groups (KIP-932): listed, never judged."""
        # runs: one per group/topic
        self._run_group = array("i")
        self._run_topic = array("H")
        self._run_base = array("i")
        self._run_partitions = array("H")
        self._run_next = array("i")
        self._free_runs: list[int] = []

    @property
    def ingested(self) -> Counter[Ingest]:
        """Commits by what became of them."""
        return Counter({kind: n for kind, n in zip(_INGEST, self._counts, strict=True) if n})

    def accepts_group(self, group: str) -> bool:
        """Within `max_group_name_bytes` and through Burrow's filter (unanchored regex search; an allowlist must
        match, a denylist must not), judged once per name."""
        return self.admission.accepts(group)

    def admits(self, cluster: str, group: str) -> bool:
        """`accepts_group`, with a name past the bound counted as dropped (for a listing of the cluster's groups)."""
        if not self.admission.fits(group):
            self.admission.refuse(cluster, NAME_TOO_LONG)
            return False
        return self.admission.passes(group)

    def add_hwm(self, cluster: str, topic: str, partition: int, offset: int, timestamp_ms: int) -> None:
        self.hwms.add(cluster, topic, partition, offset, timestamp_ms)

    def add_commit(
        self, cluster: str, group: str, topic: str, partition: int, offset: int, timestamp_ms: int, now_ms: int
    ) -> Ingest:
        """Store one commit with its lag against the newest HWM known now (Burrow's lag at ingest)."""
        if timestamp_ms < now_ms - self.expire_group_ms:
            return self._dropped(_EXPIRED)
        if group == self._recent[1] and cluster == self._recent[0]:  # a group's partitions are committed together
            gid: int | None = self._recent[2]
        else:
            groups = self._gids.get(cluster)
            gid = groups.get(group) if groups is not None else None
        if gid is None:
            admission = self.admission
            if not admission.fits(group):  # before the regexes: a 32 KiB id never reaches them
                admission.refuse(cluster, NAME_TOO_LONG)
                return self._dropped(_NAME_TOO_LONG)
            if not admission.passes(group):
                return self._dropped(_FILTERED)
        tid, partitions, hwm = self.hwms.probe(cluster, topic, partition)
        if partitions == 0:
            return self._dropped(_NO_TOPIC)
        if not 0 <= partition < partitions:
            return self._dropped(_NO_PARTITION)
        if hwm is None:
            return self._dropped(_NO_HWM)
        if gid is None:
            index = self._gids.get(cluster)
            if index is not None and len(index) >= self.admission.max_groups:
                self.admission.refuse(cluster, TOO_MANY_GROUPS)
                return self._dropped(_TOO_MANY_GROUPS)
            gid = self._new_group(cluster, group)
            run = self._run(gid, tid, partitions)
        else:
            run = self._first_run[gid]  # the group's newest topic, most often the only one
            if run == _NONE or self._run_topic[run] != tid or self._run_partitions[run] < partitions:
                run = self._run(gid, tid, partitions)
        self._recent = (cluster, group, gid)
        merged = self.commits.push(self._run_base[run] + partition, offset, timestamp_ms, max(0, hwm - offset))
        try:
            self._last_commit[gid] = timestamp_ms - self._last_epoch_ms
        except OverflowError:  # not within int32 of the epoch
            self._last_commit[gid] = self._fit_last(gid, timestamp_ms)
        code = _MERGED if merged else _STORED
        self._counts[code] += 1
        return _INGEST[code]

    def _fit_last(self, gid: int, timestamp_ms: int) -> int:
        """Move the last-commit epoch so that `timestamp_ms` and every other stored group's last commit fit int32,
        or widen them to int64 (epoch 0) when their span is too wide; returns `timestamp_ms` as stored."""
        if self._last_commit.typecode != "i":
            raise OverflowError(f"commit timestamp {timestamp_ms} does not fit int64")
        values = np.frombuffer(self._last_commit, dtype=np.int32).astype(np.int64) + self._last_epoch_ms
        live = np.array([name is not None for name in self._group_names], dtype=np.bool_)
        live[gid] = False  # its value is being replaced
        held = values[live]
        low = min(int(held.min()), timestamp_ms) if len(held) else timestamp_ms
        high = max(int(held.max()), timestamp_ms) if len(held) else timestamp_ms
        epoch = fitting_epoch(low, high)
        if epoch is None:
            self._last_commit = array("q", values.tolist())
            self._last_epoch_ms = 0
        else:
            shifted = np.where(live, values - epoch, 0).astype(np.int32)
            self._last_commit = array("i", shifted.tobytes())
            self._last_epoch_ms = epoch
        return timestamp_ms - self._last_epoch_ms

    def _dropped(self, code: int) -> Ingest:
        self._counts[code] += 1
        return _INGEST[code]

    def _new_group(self, cluster: str, group: str) -> int:
        if self._free_gids:
            gid = self._free_gids.pop()
            self._group_names[gid] = group
            self._first_run[gid] = _NONE
        else:
            gid = len(self._group_names)
            self._group_names.append(group)
            self._last_commit.append(0)
            self._first_run.append(_NONE)
        index = self._gids.get(cluster)
        if index is None:
            index = self._gids[cluster] = GroupIndex(self._group_names)
        index.add(group, gid)
        early = self._early_owners.pop((cluster, group), None)
        if early:
            self._owners[gid] = early
        return gid

    def _find_run(self, gid: int, tid: int) -> int:
        wide = self._wide.get(gid)
        if wide is not None:
            return wide.get(tid, _NONE)
        run = self._first_run[gid]
        while run != _NONE and self._run_topic[run] != tid:
            run = self._run_next[run]
        return run

    def _run(self, gid: int, tid: int, partitions: int) -> int:
        """The group's run for the topic, one slot per partition (Burrow's placeholders), grown when partitions grew."""
        run = self._find_run(gid, tid)
        if run == _NONE:
            return self._new_run(gid, tid, self.commits.allocate(partitions), partitions)
        have = self._run_partitions[run]
        if have < partitions:
            old = self._run_base[run]
            bigger = self.commits.allocate(partitions)
            for p in range(have):
                offsets, timestamps, lags = self.commits.read(old + p)
                for o, t, lag in zip(offsets, timestamps, lags, strict=True):
                    self.commits.push(bigger + p, o, t, lag)
            self.commits.release(old, have)
            if partitions > _U16_MAX:
                self._widen_runs(0, partitions)
            self._run_base[run] = bigger
            self._run_partitions[run] = partitions
        return run

    def _widen_runs(self, tid: int, partitions: int) -> None:
        """A topic id or a partition count past uint16: that column becomes int32 for good."""
        if tid > _U16_MAX and self._run_topic.typecode == "H":
            self._run_topic = array("i", self._run_topic)
        if partitions > _U16_MAX and self._run_partitions.typecode == "H":
            self._run_partitions = array("i", self._run_partitions)

    def _new_run(self, gid: int, tid: int, base: int, partitions: int) -> int:
        if tid > _U16_MAX or partitions > _U16_MAX:
            self._widen_runs(tid, partitions)
        following = self._first_run[gid]
        if self._free_runs:
            run = self._free_runs.pop()
            self._run_group[run], self._run_topic[run], self._run_base[run] = gid, tid, base
            self._run_partitions[run], self._run_next[run] = partitions, following
        else:
            run = len(self._run_group)
            self._run_group.append(gid)
            self._run_topic.append(tid)
            self._run_base.append(base)
            self._run_partitions.append(partitions)
            self._run_next.append(following)
        self._first_run[gid] = run
        if following == _NONE:  # the group's first topic
            return run
        wide = self._wide.get(gid)
        if wide is not None:
            wide[tid] = run
        else:
            chain = list(self._chain(gid))
            if len(chain) > _WIDE_GROUP_RUNS:
                self._wide[gid] = {self._run_topic[r]: r for r in chain}
        return run

    def _chain(self, gid: int) -> Iterator[int]:
        run = self._first_run[gid]
        while run != _NONE:
            yield run
            run = self._run_next[run]

    def _drop_run(self, gid: int, run: int) -> None:
        """Unlink a run from its group and give its slots back."""
        previous = _NONE
        for r in self._chain(gid):
            if r == run:
                break
            previous = r
        if previous == _NONE:
            self._first_run[gid] = self._run_next[run]
        else:
            self._run_next[previous] = self._run_next[run]
        wide = self._wide.get(gid)
        if wide is not None:
            wide.pop(self._run_topic[run], None)
        self.commits.release(self._run_base[run], self._run_partitions[run])
        self._run_group[run] = _NONE
        self._run_partitions[run] = 0
        self._free_runs.append(run)

    def _gid(self, cluster: str, group: str) -> int | None:
        groups = self._gids.get(cluster)
        return groups.get(group) if groups is not None else None

    def set_owner(self, cluster: str, group: str, topic: str, partition: int, owner: str, client_id: str) -> None:
        """Record who consumes a partition (from group metadata); kept aside until the group's first commit."""
        gid = self._gid(cluster, group)
        if gid is not None:
            self._owners.setdefault(gid, {})[(topic, partition)] = (owner, client_id)
        elif self.accepts_group(group):
            self._early_owners.setdefault((cluster, group), {})[(topic, partition)] = (owner, client_id)

    def clear_owners(self, cluster: str, group: str) -> None:
        """A group with no members owns nothing (Burrow: member count 0 clears owners)."""
        self._early_owners.pop((cluster, group), None)
        gid = self._gid(cluster, group)
        if gid is not None:
            self._owners.pop(gid, None)

    def owners(self, gid: int) -> dict[tuple[str, int], tuple[str, str]]:
        """(topic, partition) -> (owner, client id) of a group id; empty when unknown."""
        return self._owners.get(gid, {})

    def set_members(self, cluster: str, group: str, count: int | None) -> None:
        """The group's member count as its metadata says now (classic or consumer protocol); None forgets it."""
        if count is None:
            self._members.pop((cluster, group), None)
        elif self.accepts_group(group):
            self._members[(cluster, group)] = count

    def members(self, cluster: str, group: str) -> int | None:
        """The group's member count; None when no metadata was seen."""
        return self._members.get((cluster, group))

    def member_counts(self, cluster: str) -> list[tuple[str, int]]:
        """(group, members) of every group of the cluster whose metadata was seen, in name order."""
        return sorted((g, n) for (c, g), n in self._members.items() if c == cluster)

    def set_share_group(self, cluster: str, group: str, present: bool) -> None:
        """A share group appeared (or was deleted): listed as not judged, it commits no offsets to judge."""
        groups = self._share_groups.setdefault(cluster, set())
        if present and self.accepts_group(group):
            groups.add(group)
        else:
            groups.discard(group)

    def share_groups(self, cluster: str) -> list[str]:
        return sorted(self._share_groups.get(cluster, ()))

    def delete_group(self, cluster: str, group: str) -> bool:
        """Forget a group (tombstone, API DELETE, expiry); True if it existed."""
        groups = self._gids.get(cluster)
        gid = groups.remove(group) if groups is not None else None
        self._recent = _NO_RECENT  # its id may be handed out again
        self._members.pop((cluster, group), None)
        self._early_owners.pop((cluster, group), None)
        if gid is None:
            return False
        for run in list(self._chain(gid)):
            self._drop_run(gid, run)
        self._wide.pop(gid, None)
        self._owners.pop(gid, None)
        self._group_names[gid] = None
        self._free_gids.append(gid)
        return True

    def clear_partition(self, cluster: str, group: str, topic: str, partition: int) -> None:
        """An offset tombstone: empty the window; a group left with no commits at all is deleted."""
        gid = self._gid(cluster, group)
        tid = self.hwms.topic_id(cluster, topic)
        run = self._find_run(gid, tid) if gid is not None and tid is not None else _NONE
        if gid is None or run == _NONE or partition >= self._run_partitions[run]:
            return
        self.commits.clear(self._run_base[run] + partition)
        if not any(
            self.commits.count(self._run_base[r] + p) for r in self._chain(gid) for p in range(self._run_partitions[r])
        ):
            self.delete_group(cluster, group)

    def delete_group_topic(self, cluster: str, group: str, topic: str) -> bool:
        gid = self._gid(cluster, group)
        tid = self.hwms.topic_id(cluster, topic)
        run = self._find_run(gid, tid) if gid is not None and tid is not None else _NONE
        if gid is None or run == _NONE:
            return False
        self._drop_run(gid, run)
        return True

    def delete_topic(self, cluster: str, topic: str) -> None:
        """A topic vanished from the cluster: drop its HWMs and remove it from every group."""
        tid = self.hwms.delete_topic(cluster, topic)
        if tid is None:
            return
        for run in [r for r, t in enumerate(self._run_topic) if t == tid and self._run_group[r] != _NONE]:
            self._drop_run(self._run_group[run], run)

    def clusters(self) -> list[str]:
        return sorted({c for c, groups in self._gids.items() if groups} | set(self.hwms.clusters()))

    def groups(self, cluster: str) -> list[str]:
        return self.sorted_groups(cluster)[0]

    def sorted_groups(self, cluster: str) -> tuple[list[str], NDArray[np.int64]]:
        """The cluster's stored groups in name order and their ids, for readers of every group (the scrape): the
        index keeps the order between calls, and no name is looked up one by one."""
        index = self._gids.get(cluster)
        if index is None:
            return [], np.zeros(0, dtype=np.int64)
        order = index.in_name_order()
        named: list[str] = self._group_names  # type: ignore[assignment]  # an indexed id is always named
        names = list(map(named.__getitem__, order))
        return names, np.frombuffer(order, dtype=np.int32).astype(np.int64)

    def groups_at(self, cluster: str, now_ms: int) -> tuple[list[str], NDArray[np.int64], NDArray[np.bool_] | None]:
        """`sorted_groups`, then `purge_expired`: every group in name order with its id, and which of them expired
        (None when none did). The readers of every group (evaluation, scrape) take the others' ids."""
        names, ids = self.sorted_groups(cluster)
        expired = set(self.purge_expired(cluster, now_ms))
        if not expired:
            return names, ids, None
        return names, ids, np.fromiter((name in expired for name in names), dtype=np.bool_, count=len(names))

    def group_id(self, cluster: str, group: str) -> int | None:
        """The stored group's id; None when the cluster has no such group."""
        return self._gid(cluster, group)

    def group_topics(self, cluster: str, group: str) -> list[str]:
        gid = self._gid(cluster, group)
        if gid is None:
            return []
        return sorted(self.hwms.topic_name(self._run_topic[r]) for r in self._chain(gid))

    def consumers_of(self, cluster: str, topic: str) -> list[str]:
        tid = self.hwms.topic_id(cluster, topic)
        if tid is None:
            return []
        names = self._group_names
        return sorted(
            names[g] or ""
            for r, (g, t) in enumerate(zip(self._run_group, self._run_topic, strict=True))
            if t == tid and g != _NONE and self._run_partitions[r]
        )

    def has_group(self, cluster: str, group: str, now_ms: int) -> bool:
        """True if the group is stored and not expired; an expired group is purged here (Burrow's lazy purge)."""
        gid = self._gid(cluster, group)
        if gid is None:
            return False
        if self._last_commit[gid] + self._last_epoch_ms < now_ms - self.expire_group_ms:
            self.delete_group(cluster, group)
            return False
        return True

    def last_commit_ms(self, cluster: str, group: str) -> int | None:
        """The timestamp of the group's newest commit (what expire-group is measured from); None when not stored."""
        gid = self._gid(cluster, group)
        return None if gid is None else self._last_commit[gid] + self._last_epoch_ms

    def purge_expired(self, cluster: str, now_ms: int) -> list[str]:
        """`has_group` over every group of the cluster at once; returns the names purged."""
        index = self._gids.get(cluster)
        if index is None:
            return []
        cutoff = now_ms - self.expire_group_ms - self._last_epoch_ms
        ids = index.ids()
        wide = self._last_commit.typecode == "q"
        last: NDArray[np.signedinteger[Any]] = np.frombuffer(self._last_commit, dtype=np.int64 if wide else np.int32)
        old = ids[last[ids] < cutoff].tolist()
        del last  # a view of the array, which could not grow while it lives
        names = self._group_names
        expired = [name for name in map(names.__getitem__, old) if name is not None]
        for name in expired:
            self.delete_group(cluster, name)
        return expired

    def slots(self, cluster: str, group: str) -> Iterator[PartitionSlot]:
        """The group's partitions in topic then partition order, placeholders included."""
        gid = self._gid(cluster, group)
        if gid is None:
            return
        owners = self._owners.get(gid, {})
        runs = sorted((self.hwms.topic_name(self._run_topic[r]), r) for r in self._chain(gid))
        for topic, run in runs:
            base = self._run_base[run]
            for p in range(self._run_partitions[run]):
                owner, client_id = owners.get((topic, p), ("", ""))
                yield PartitionSlot(topic, p, base + p, owner, client_id)

    def group_runs(self, gid: int) -> list[int]:
        """Run ids of one group (one per topic, unordered)."""
        return list(self._chain(gid))

    def run_buffers(self) -> tuple[array[int], array[int], array[int], array[int]]:
        """Per run id: group id (-1 when free), topic id, first slot, partitions; for the columnar block (read only)."""
        return self._run_group, self._run_topic, self._run_base, self._run_partitions

    def group_name(self, gid: int) -> str:
        name = self._group_names[gid]
        if name is None:
            raise KeyError(f"group id {gid} is not in use")
        return name

    def group_count(self) -> int:
        return sum(len(groups) for groups in self._gids.values())
