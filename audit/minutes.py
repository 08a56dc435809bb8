"""Broker-side audit arithmetic (pure): the offsets of each partition at the minute boundaries, and the moments a
group's committed offsets reached them, become one `MinuteAudit` per (group, topic, minute): records written,
records the group passed, completeness and produce-to-commit latency (docs/audit.md). The clock is an argument."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MINUTE_MS = 60_000


def minute_of(ts_ms: int) -> int:
    """The start of the UTC minute holding `ts_ms` (epoch milliseconds)."""
    return ts_ms - ts_ms % MINUTE_MS


def due_boundaries(read_up_to_ms: int | None, now_ms: int, grace_ms: int, since_ms: int | None = None) -> list[int]:
    """Minute boundaries to read now: every one after the last read that is at least `grace_ms` old (records of
    the minute before it still on their way get that long). The first read starts at `since_ms` (rounded down to a
    minute), or else at the newest due boundary."""
    newest = minute_of(now_ms - grace_ms)
    if read_up_to_ms is not None:
        first = read_up_to_ms + MINUTE_MS
    elif since_ms is not None:
        first = minute_of(since_ms)
    else:
        first = newest
    return list(range(first, newest + 1, MINUTE_MS))


@dataclass(frozen=True, slots=True)
class MinuteAudit:
    """One (group, topic, minute) settled: the group passed the minute's end on every partition, or `max_wait`
    ran out first."""

    group: str
    topic: str
    minute_ms: int
    """Start of the minute of record timestamps (epoch ms, UTC)."""
    written: int
    """Records of the topic whose offsets lie between the minute's start and end boundaries."""
    passed: int
    """Of those, the records at or below the group's committed offsets when the minute settled."""
    passed_at_ms: int | None
    """First observation at which the committed offset was at or past the minute's end on every partition (not
    before the minute's end: skewed timestamps can put it earlier); None when `max_wait` ran out first."""

    @property
    def completeness(self) -> float:
        """passed / written; 1.0 for a minute without records."""
        return 1.0 if self.written == 0 else self.passed / self.written

    @property
    def latency_s(self) -> float | None:
        """Produce-to-commit latency of the minute's last record: from the minute's end to `passed_at_ms`, at
        least 0; records earlier in the minute waited up to 60 s more. None when not passed."""
        if self.passed_at_ms is None:
            return None
        return max(0, self.passed_at_ms - self.minute_ms - MINUTE_MS) / 1000


@dataclass
class _Commits:
    """One (group, topic, partition): committed offsets as observed, oldest first."""

    at_ms: list[int]
    offsets: list[int]

    def first_at_or_past(self, offset: int) -> int | None:
        """When an observed committed offset first reached `offset` (a reset may move it back; the first counts)."""
        for at, committed in zip(self.at_ms, self.offsets, strict=True):
            if committed >= offset:
                return at
        return None


class MinuteBook:
    """The state between cycles: boundary offsets per partition, commit observations per group-partition, and the
    next minute to settle per (group, topic). Minutes settle in order, each exactly once."""

    def __init__(self, groups: Iterable[str], max_wait_ms: int) -> None:
        self.groups = tuple(groups)
        self.max_wait_ms = max_wait_ms
        """A minute the group has not passed this long after its end settles anyway, as incomplete."""
        self._bounds: dict[str, dict[int, dict[int, int]]] = {}
        """Topic -> partition -> boundary -> offset: by topic, so settling a topic's minute reads only its own."""
        self._read_up_to: dict[str, int] = {}
        self._first: dict[str, int] = {}
        self._commits: dict[tuple[str, str, int], _Commits] = {}
        self._next: dict[tuple[str, str], int] = {}

    def read_up_to(self, topic: str) -> int | None:
        """The newest boundary recorded for the topic."""
        return self._read_up_to.get(topic)

    def record_boundary(self, topic: str, boundary_ms: int, offsets: Mapping[int, int]) -> None:
        """The offset of the first record with a timestamp at or after `boundary_ms`, per partition (the log end
        where there is none yet)."""
        partitions = self._bounds.setdefault(topic, {})
        for partition, offset in offsets.items():
            partitions.setdefault(partition, {})[boundary_ms] = offset
        self._read_up_to[topic] = max(boundary_ms, self._read_up_to.get(topic, boundary_ms))
        self._first.setdefault(topic, boundary_ms)

    def observe_commits(self, group: str, committed: Mapping[tuple[str, int], int], at_ms: int) -> None:
        """The group's committed offsets as read at `at_ms` (partitions without a commit left out)."""
        for (topic, partition), offset in committed.items():
            seen = self._commits.setdefault((group, topic, partition), _Commits([], []))
            if not seen.offsets or seen.offsets[-1] != offset:  # an unchanged offset passes nothing new
                seen.at_ms.append(at_ms)
                seen.offsets.append(offset)

    def settle(self, now_ms: int) -> list[MinuteAudit]:
        """Every (group, topic, minute) that can settle at `now_ms`, oldest minute first; then forget what no
        unsettled minute needs."""
        settled: list[MinuteAudit] = []
        for topic, first in self._first.items():
            for group in self.groups:
                minute = self._next.get((group, topic), first)
                while minute + MINUTE_MS <= self._read_up_to[topic]:
                    audit = self._settle_minute(group, topic, minute, now_ms)
                    if audit is None:
                        break
                    settled.append(audit)
                    minute += MINUTE_MS
                self._next[(group, topic)] = minute
        self._forget(now_ms)
        return settled

    def _settle_minute(self, group: str, topic: str, minute: int, now_ms: int) -> MinuteAudit | None:
        end = minute + MINUTE_MS
        written = passed = 0
        passed_at: int | None = end
        for partition, bounds in self._bounds.get(topic, {}).items():
            if minute not in bounds or end not in bounds:
                continue  # a partition added after the minute began has no share in it
            count = max(0, bounds[end] - bounds[minute])
            written += count
            if bounds[end] == 0:
                continue  # nothing was ever written there: no commit is owed
            seen = self._commits.get((group, topic, partition))
            committed = seen.offsets[-1] if seen is not None else None
            if committed is not None:
                passed += min(count, max(0, committed - bounds[minute]))
            at = seen.first_at_or_past(bounds[end]) if seen is not None else None
            passed_at = None if at is None or passed_at is None else max(passed_at, at)
        if passed_at is None and now_ms - end < self.max_wait_ms:
            return None
        if passed_at is not None:
            passed = written  # every partition's commit reached the end once (a later reset does not undo it)
        return MinuteAudit(group, topic, minute, written, passed, passed_at)

    def _forget(self, now_ms: int) -> None:
        for topic, partitions in self._bounds.items():
            oldest = min((self._next.get((g, topic), self._first[topic]) for g in self.groups), default=None)
            if oldest is None:
                continue
            for bounds in partitions.values():
                for boundary in [b for b in bounds if b < oldest]:
                    del bounds[boundary]
        horizon = now_ms - self.max_wait_ms - 2 * MINUTE_MS
        for (group, topic, partition), seen in self._commits.items():
            # Observations below the start of the oldest unsettled minute can answer no boundary still needed
            # (every later boundary is at or above it); the newest is kept for the passed count.
            needed = self._bounds.get(topic, {}).get(partition, {}).get(self._next.get((group, topic), -1))
            drop = bisect_left(seen.at_ms, horizon)
            while needed is not None and drop < len(seen.offsets) and seen.offsets[drop] < needed:
                drop += 1
            drop = min(drop, len(seen.at_ms) - 1)
            del seen.at_ms[:drop], seen.offsets[:drop]

    def observations(self) -> int:
        """Commit observations held (memory: bounded by the unsettled minutes and `max_wait`)."""
        return sum(len(seen.at_ms) for seen in self._commits.values())
