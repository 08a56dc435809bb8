"""The offset store: which groups, topics and partitions exist, routed onto the array windows of `windows.py`.

Ingestion (`ingest/`, `replay.py`) calls `add_hwm` and `add_commit`; the evaluator reads a group's slots, one group at
a time (`slots`) or every group of a cluster at once (`runs`). The acceptance rules are Burrow's (`addConsumerOffset` in
`core/internal/storage/inmemory.go`): a commit older than `expire-group` is dropped, a filtered group is dropped, and a
commit for a topic or partition with no HWM sample yet is dropped (its lag could not be computed); every drop is counted
by reason so that nothing disappears silently.

Index layout, chosen so that a million group-partitions cost little beyond their windows: a group is an integer id
(an int32 slot per cluster/group name in a `GroupIndex`, no dict entry or `int` object per group), a group/topic is
a *run* (a contiguous range of window slots, one per partition) kept in the flat arrays of `runs.py` and chained per
group, and topics are the HWM store's interned topic ids. Owners, member counts and share groups (from group
metadata) live in `membership.py`, only for groups that have any. This module routes and accepts commits, expires
groups and serves deletes.
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

from lag.store.group_index import NAME_TOO_LONG, TOO_MANY_GROUPS, GroupAdmission, GroupIndex
from lag.store.hwm_windows import HwmWindows
from lag.store.membership import GroupMembership, Owners
from lag.store.runs import NONE, GroupRuns
from lag.store.streams_starts import StreamsStarts
from lag.store.windows import CommitWindows


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
        self._gids: dict[str, GroupIndex] = {}
        """Cluster -> group name -> group id."""
        self.runs = GroupRuns(self.commits)
        """Per group id its name, last commit time and runs of window slots."""
        self.membership = GroupMembership(self.accepts_group)
        """Owners, member counts and share groups, from group metadata."""
        self.streams_starts = StreamsStarts()
        """Streams groups and their input partitions' log starts (an uncommitted partition's lag counts from there)."""
        self._recent = _NO_RECENT
        """(cluster, group, id) of the last commit stored: the records of one group's commit come one after another
        in `__consumer_offsets`, and a string compare is cheaper than a probe of the `GroupIndex`."""

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
        runs = self.runs  # its arrays are read here, not through its methods: this is the path of every commit
        if gid is None:
            index = self._gids.get(cluster)
            if index is not None and len(index) >= self.admission.max_groups:
                self.admission.refuse(cluster, TOO_MANY_GROUPS)
                return self._dropped(_TOO_MANY_GROUPS)
            gid = self._new_group(cluster, group)
            run = runs.run(gid, tid, partitions)
        else:
            run = runs.first_run[gid]  # the group's newest topic, most often the only one
            if run == NONE or runs.run_topic[run] != tid or runs.run_partitions[run] < partitions:
                run = runs.run(gid, tid, partitions)
        self._recent = (cluster, group, gid)
        lag = hwm - offset
        merged = self.commits.push(runs.run_base[run] + partition, offset, timestamp_ms, lag if lag > 0 else 0)
        try:
            runs.last_commit[gid] = timestamp_ms - runs.last_epoch_ms
        except OverflowError:  # not within int32 of the epoch
            runs.last_commit[gid] = runs.fit_last(gid, timestamp_ms)
        code = _MERGED if merged else _STORED
        self._counts[code] += 1
        return _INGEST[code]

    def _dropped(self, code: int) -> Ingest:
        self._counts[code] += 1
        return _INGEST[code]

    def _new_group(self, cluster: str, group: str) -> int:
        gid = self.runs.new_group(group)
        index = self._gids.get(cluster)
        if index is None:
            index = self._gids[cluster] = GroupIndex(self.runs.names)
        index.add(group, gid)
        self.membership.adopt(cluster, group, gid)
        return gid

    def _gid(self, cluster: str, group: str) -> int | None:
        groups = self._gids.get(cluster)
        return groups.get(group) if groups is not None else None

    # -- membership (kept apart in `membership.py`; these keep the store's callers as they were) --------------------

    def set_owner(self, cluster: str, group: str, topic: str, partition: int, owner: str, client_id: str) -> None:
        """Record who consumes a partition (from group metadata); kept aside until the group's first commit."""
        self.membership.set_owner(cluster, group, self._gid(cluster, group), topic, partition, owner, client_id)

    def clear_owners(self, cluster: str, group: str) -> None:
        """A group with no members owns nothing (Burrow: member count 0 clears owners)."""
        self.membership.clear_owners(cluster, group, self._gid(cluster, group))

    def owners(self, gid: int) -> Owners:
        """(topic, partition) -> (owner, client id) of a group id; empty when unknown."""
        return self.membership.owners(gid)

    def set_members(self, cluster: str, group: str, count: int | None) -> None:
        """The group's member count as its metadata says now (classic or consumer protocol); None forgets it."""
        self.membership.set_members(cluster, group, count)

    def members(self, cluster: str, group: str) -> int | None:
        """The group's member count; None when no metadata was seen."""
        return self.membership.members(cluster, group)

    def member_counts(self, cluster: str) -> list[tuple[str, int]]:
        """(group, members) of every group of the cluster whose metadata was seen, in name order."""
        return self.membership.member_counts(cluster)

    def set_share_group(self, cluster: str, group: str, present: bool) -> None:
        """A share group appeared (or was deleted): listed as not judged, it commits no offsets to judge."""
        self.membership.set_share_group(cluster, group, present)

    def share_groups(self, cluster: str) -> list[str]:
        return self.membership.share_groups(cluster)

    # -- deletes -----------------------------------------------------------------------------------------------------

    def delete_group(self, cluster: str, group: str) -> bool:
        """Forget a group (tombstone, API DELETE, expiry); True if it existed."""
        groups = self._gids.get(cluster)
        gid = groups.remove(group) if groups is not None else None
        self._recent = _NO_RECENT  # its id may be handed out again
        self.membership.forget(cluster, group, gid)
        if gid is None:
            return False
        self.runs.free_group(gid)
        return True

    def clear_partition(self, cluster: str, group: str, topic: str, partition: int) -> None:
        """An offset tombstone: empty the window; a group left with no commits at all is deleted."""
        gid = self._gid(cluster, group)
        tid = self.hwms.topic_id(cluster, topic)
        run = self.runs.find_run(gid, tid) if gid is not None and tid is not None else NONE
        if gid is None or run == NONE or partition >= self.runs.run_partitions[run]:
            return
        self.commits.clear(self.runs.run_base[run] + partition)
        if not self.runs.has_commits(gid):
            self.delete_group(cluster, group)

    def delete_group_topic(self, cluster: str, group: str, topic: str) -> bool:
        gid = self._gid(cluster, group)
        tid = self.hwms.topic_id(cluster, topic)
        run = self.runs.find_run(gid, tid) if gid is not None and tid is not None else NONE
        if gid is None or run == NONE:
            return False
        self.runs.drop_run(gid, run)
        return True

    def delete_topic(self, cluster: str, topic: str) -> None:
        """A topic vanished from the cluster: drop its HWMs and remove it from every group."""
        tid = self.hwms.delete_topic(cluster, topic)
        if tid is None:
            return
        for run in self.runs.runs_on(tid):
            self.runs.drop_run(self.runs.run_group[run], run)

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
        named: list[str] = self.runs.names  # type: ignore[assignment]  # an indexed id is always named
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
        return sorted(self.hwms.topic_name(self.runs.run_topic[r]) for r in self.runs.chain(gid))

    def consumers_of(self, cluster: str, topic: str) -> list[str]:
        tid = self.hwms.topic_id(cluster, topic)
        if tid is None:
            return []
        runs = self.runs
        return sorted(
            runs.names[g] or ""
            for r, (g, t) in enumerate(zip(runs.run_group, runs.run_topic, strict=True))
            if t == tid and g != NONE and runs.run_partitions[r]
        )

    def has_group(self, cluster: str, group: str, now_ms: int) -> bool:
        """True if the group is stored and not expired; an expired group is purged here (Burrow's lazy purge)."""
        gid = self._gid(cluster, group)
        if gid is None:
            return False
        if self.runs.last_commit_ms(gid) < now_ms - self.expire_group_ms:
            self.delete_group(cluster, group)
            return False
        return True

    def last_commit_ms(self, cluster: str, group: str) -> int | None:
        """The timestamp of the group's newest commit (what expire-group is measured from); None when not stored."""
        gid = self._gid(cluster, group)
        return None if gid is None else self.runs.last_commit_ms(gid)

    def purge_expired(self, cluster: str, now_ms: int) -> list[str]:
        """`has_group` over every group of the cluster at once; returns the names purged."""
        index = self._gids.get(cluster)
        if index is None:
            return []
        runs = self.runs
        cutoff = now_ms - self.expire_group_ms - runs.last_epoch_ms
        ids = index.ids()
        wide = runs.last_commit.typecode == "q"
        last: NDArray[np.signedinteger[Any]] = np.frombuffer(runs.last_commit, dtype=np.int64 if wide else np.int32)
        old = ids[last[ids] < cutoff].tolist()
        del last  # a view of the array, which could not grow while it lives
        names = runs.names
        expired = [name for name in map(names.__getitem__, old) if name is not None]
        for name in expired:
            self.delete_group(cluster, name)
        return expired

    def slots(self, cluster: str, group: str) -> Iterator[PartitionSlot]:
        """The group's partitions in topic then partition order, placeholders included."""
        gid = self._gid(cluster, group)
        if gid is None:
            return
        owners = self.membership.owners(gid)
        runs = sorted((self.hwms.topic_name(self.runs.run_topic[r]), r) for r in self.runs.chain(gid))
        for topic, run in runs:
            base = self.runs.run_base[run]
            for p in range(self.runs.run_partitions[run]):
                owner, client_id = owners.get((topic, p), ("", ""))
                yield PartitionSlot(topic, p, base + p, owner, client_id)

    def group_runs(self, gid: int) -> list[int]:
        """Run ids of one group (one per topic, unordered)."""
        return list(self.runs.chain(gid))

    def run_buffers(self) -> tuple[array[int], array[int], array[int], array[int]]:
        """Per run id: group id (-1 when free), topic id, first slot, partitions; for the columnar block (read only)."""
        runs = self.runs
        return runs.run_group, runs.run_topic, runs.run_base, runs.run_partitions

    def group_name(self, gid: int) -> str:
        name = self.runs.names[gid]
        if name is None:
            raise KeyError(f"group id {gid} is not in use")
        return name

    def group_count(self) -> int:
        return sum(len(groups) for groups in self._gids.values())
