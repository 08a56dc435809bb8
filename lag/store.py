"""The offset store: which groups, topics and partitions exist, routed onto the array windows of `window.py`.

Ingestion (`source.py`, `replay.py`) calls `add_hwm` and `add_commit`; the evaluator reads a group's slots. The
acceptance rules are Burrow's (research §1.4): a commit older than `expire-group` is dropped, a filtered group is
dropped, and a commit for a topic or partition with no HWM sample yet is dropped (its lag could not be computed);
every drop is counted by reason so that nothing disappears silently.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from lag.window import CommitWindows, HwmWindows


class Ingest(enum.Enum):
    """What became of one commit."""

    STORED = "stored"
    MERGED = "merged"
    """Stored over the previous cell (min-distance)."""
    EXPIRED = "expired"
    """Older than expire-group."""
    FILTERED = "filtered"
    """Group rejected by the allow/deny regexes."""
    NO_TOPIC = "no_topic"
    NO_PARTITION = "no_partition"
    NO_HWM = "no_hwm"


@dataclass
class _TopicRun:
    base: int
    partitions: int


@dataclass
class _Group:
    topics: dict[str, _TopicRun] = field(default_factory=dict)
    last_commit_ms: int = 0
    owners: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    """(topic, partition) -> (owner host, client id), from group metadata; absent when unknown."""


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
    ) -> None:
        self.intervals = intervals
        self.commits = CommitWindows(intervals, min_distance_ms)
        self.hwms = HwmWindows(max(intervals, hwm_capacity or 0))
        self.expire_group_ms = expire_group_ms
        self._allow = re.compile(group_allow) if group_allow else None
        self._deny = re.compile(group_deny) if group_deny else None
        self._groups: dict[tuple[str, str], _Group] = {}
        self.ingested: Counter[Ingest] = Counter()

    def accepts_group(self, group: str) -> bool:
        """Burrow's filter: unanchored regex search; an allowlist must match, a denylist must not."""
        if self._allow is not None and not self._allow.search(group):
            return False
        return not (self._deny is not None and self._deny.search(group))

    def add_hwm(self, cluster: str, topic: str, partition: int, offset: int, timestamp_ms: int) -> None:
        self.hwms.add(cluster, topic, partition, offset, timestamp_ms)

    def add_commit(
        self, cluster: str, group: str, topic: str, partition: int, offset: int, timestamp_ms: int, now_ms: int
    ) -> Ingest:
        """Store one commit with its lag against the newest HWM known now (Burrow's lag at ingest)."""
        result = self._add_commit(cluster, group, topic, partition, offset, timestamp_ms, now_ms)
        self.ingested[result] += 1
        return result

    def _add_commit(
        self, cluster: str, group: str, topic: str, partition: int, offset: int, timestamp_ms: int, now_ms: int
    ) -> Ingest:
        if timestamp_ms < now_ms - self.expire_group_ms:
            return Ingest.EXPIRED
        key = (cluster, group)
        entry = self._groups.get(key)
        if entry is None and not self.accepts_group(group):
            return Ingest.FILTERED
        partitions = self.hwms.partition_count(cluster, topic)
        if partitions == 0:
            return Ingest.NO_TOPIC
        if not 0 <= partition < partitions:
            return Ingest.NO_PARTITION
        hwm = self.hwms.latest(cluster, topic, partition)
        if hwm is None:
            return Ingest.NO_HWM
        if entry is None:
            entry = self._groups[key] = _Group()
        run = self._run(entry, topic, partitions)
        merged = self.commits.push(run.base + partition, offset, timestamp_ms, max(0, hwm - offset))
        entry.last_commit_ms = timestamp_ms
        return Ingest.MERGED if merged else Ingest.STORED

    def _run(self, entry: _Group, topic: str, partitions: int) -> _TopicRun:
        """The group's slots for `topic`, one per partition (Burrow's placeholders), grown when partitions grew."""
        run = entry.topics.get(topic)
        if run is None:
            run = entry.topics[topic] = _TopicRun(self.commits.allocate(partitions), partitions)
        elif run.partitions < partitions:
            bigger = self.commits.allocate(partitions)
            for p in range(run.partitions):
                offsets, timestamps, lags = self.commits.read(run.base + p)
                for o, t, lag in zip(offsets, timestamps, lags, strict=True):
                    self.commits.push(bigger + p, o, t, lag)
            self.commits.release(run.base, run.partitions)
            run = entry.topics[topic] = _TopicRun(bigger, partitions)
        return run

    def set_owner(self, cluster: str, group: str, topic: str, partition: int, owner: str, client_id: str) -> None:
        """Record who consumes a partition (from group metadata); only for groups already stored."""
        entry = self._groups.get((cluster, group))
        if entry is not None:
            entry.owners[(topic, partition)] = (owner, client_id)

    def clear_owners(self, cluster: str, group: str) -> None:
        """A group with no members owns nothing (Burrow: member count 0 clears owners)."""
        entry = self._groups.get((cluster, group))
        if entry is not None:
            entry.owners.clear()

    def delete_group(self, cluster: str, group: str) -> bool:
        """Forget a group (tombstone, API DELETE, expiry); True if it existed."""
        entry = self._groups.pop((cluster, group), None)
        if entry is None:
            return False
        for run in entry.topics.values():
            self.commits.release(run.base, run.partitions)
        return True

    def clear_partition(self, cluster: str, group: str, topic: str, partition: int) -> None:
        """An offset tombstone: empty the window; a group left with no commits at all is deleted."""
        entry = self._groups.get((cluster, group))
        run = entry.topics.get(topic) if entry is not None else None
        if entry is None or run is None or partition >= run.partitions:
            return
        self.commits.clear(run.base + partition)
        if not any(self.commits.count(r.base + p) for r in entry.topics.values() for p in range(r.partitions)):
            self.delete_group(cluster, group)

    def delete_group_topic(self, cluster: str, group: str, topic: str) -> bool:
        entry = self._groups.get((cluster, group))
        run = entry.topics.pop(topic, None) if entry is not None else None
        if run is None:
            return False
        self.commits.release(run.base, run.partitions)
        return True

    def delete_topic(self, cluster: str, topic: str) -> None:
        """A topic vanished from the cluster: drop its HWMs and remove it from every group."""
        self.hwms.delete_topic(cluster, topic)
        for (c, g), _entry in list(self._groups.items()):
            if c == cluster:
                self.delete_group_topic(c, g, topic)

    def clusters(self) -> list[str]:
        return sorted({c for (c, _) in self._groups} | set(self.hwms.clusters()))

    def groups(self, cluster: str) -> list[str]:
        return sorted(g for (c, g) in self._groups if c == cluster)

    def group_topics(self, cluster: str, group: str) -> list[str]:
        entry = self._groups.get((cluster, group))
        return sorted(entry.topics) if entry is not None else []

    def consumers_of(self, cluster: str, topic: str) -> list[str]:
        return sorted(g for (c, g), e in self._groups.items() if c == cluster and topic in e.topics)

    def has_group(self, cluster: str, group: str, now_ms: int) -> bool:
        """True if the group is stored and not expired; an expired group is purged here (Burrow's lazy purge)."""
        entry = self._groups.get((cluster, group))
        if entry is None:
            return False
        if entry.last_commit_ms < now_ms - self.expire_group_ms:
            self.delete_group(cluster, group)
            return False
        return True

    def slots(self, cluster: str, group: str) -> Iterator[PartitionSlot]:
        """The group's partitions in topic then partition order, placeholders included."""
        entry = self._groups.get((cluster, group))
        if entry is None:
            return
        for topic in sorted(entry.topics):
            run = entry.topics[topic]
            for p in range(run.partitions):
                owner, client_id = entry.owners.get((topic, p), ("", ""))
                yield PartitionSlot(topic, p, run.base + p, owner, client_id)

    def group_count(self) -> int:
        return len(self._groups)
