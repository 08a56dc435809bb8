"""Fixed-size windows laid out in flat arrays: the last N commits of every group-partition and the last M high
watermarks of every partition. Fed by `store.py`, read by `evaluator.py`.

Why arrays: an object per commit (Burrow's `container/ring` of `*ConsumerOffset`) costs about 1 KB per
group-partition; here a group-partition is one slot of `intervals` int64 triples in three `array('q')`s plus two
bytes of ring bookkeeping, so 1,000,000 group-partitions at intervals=10 take about 250 MB less than that.

Ring layout: slot `s` owns cells `[s*N, (s+1)*N)`; `head[s]` is the next cell to write, `count[s]` how many are
filled; the oldest cell is `(head - count) mod N`.
"""

from __future__ import annotations

from array import array

NO_LAG = -1
"""Stored in the lag array when no HWM was known at commit time (Burrow HEAD's `Lag: nil`)."""

_GROWTH_MIN_SLOTS = 1024


class CommitWindows:
    """Rings of (offset, commit timestamp ms, lag at commit) for group-partitions, with Burrow's min-distance merge.

    Slots are handed out in contiguous runs (one run per group/topic, one slot per partition), so the index above
    costs one entry per group-topic rather than per group-partition. Released runs are reused by size.
    """

    def __init__(self, intervals: int, min_distance_ms: int = 0) -> None:
        if not 1 <= intervals <= 255:
            raise ValueError(f"intervals must be 1-255, got {intervals}")
        self.intervals = intervals
        self.min_distance_ms = min_distance_ms
        self._offsets = array("q")
        self._timestamps = array("q")
        self._lags = array("q")
        self._head = array("B")
        self._count = array("B")
        self._slots = 0
        """Slots handed out so far (the high-water mark of the arrays in use)."""
        self._free: dict[int, list[int]] = {}

    @property
    def capacity(self) -> int:
        return len(self._head)

    def allocate(self, n: int) -> int:
        """A run of `n` empty slots; returns the first slot's index."""
        reusable = self._free.get(n)
        if reusable:
            base = reusable.pop()
            for slot in range(base, base + n):
                self._head[slot] = 0
                self._count[slot] = 0
            return base
        base = self._slots
        if base + n > self.capacity:
            self._grow(max(base + n, 2 * self.capacity, _GROWTH_MIN_SLOTS))
        self._slots = base + n
        return base

    def release(self, base: int, n: int) -> None:
        """Give a run back for reuse (a group or topic was deleted)."""
        self._free.setdefault(n, []).append(base)

    def _grow(self, slots: int) -> None:
        extra = slots - self.capacity
        cells = extra * self.intervals
        for arr in (self._offsets, self._timestamps, self._lags):
            arr.frombytes(bytes(8 * cells))
        self._head.frombytes(bytes(extra))
        self._count.frombytes(bytes(extra))

    def push(self, slot: int, offset: int, timestamp_ms: int, lag: int) -> bool:
        """Store a commit; returns True when it was merged into the previous cell.

        Burrow's min-distance merge: a commit less than `min_distance_ms` after the newest stored commit overwrites
        that cell's offset and lag but keeps its timestamp, so cells stay at least min-distance apart and their
        timestamps are bucket starts (research §1.4). Burrow compares with `<`, so with min-distance 0 only a commit
        whose timestamp goes backwards merges.
        """
        n = self.intervals
        head = self._head[slot]
        count = self._count[slot]
        base = slot * n
        if count:
            prev = base + (head - 1) % n
            if timestamp_ms - self._timestamps[prev] < self.min_distance_ms:
                self._offsets[prev] = offset
                self._lags[prev] = lag
                return True
        cell = base + head
        self._offsets[cell] = offset
        self._timestamps[cell] = timestamp_ms
        self._lags[cell] = lag
        self._head[slot] = (head + 1) % n
        if count < n:
            self._count[slot] = count + 1
        return False

    def clear(self, slot: int) -> None:
        """Empty a slot (the partition's committed offset was deleted)."""
        self._head[slot] = 0
        self._count[slot] = 0

    def count(self, slot: int) -> int:
        return self._count[slot]

    def newest(self, slot: int) -> tuple[int, int, int] | None:
        """(offset, timestamp_ms, lag) of the newest commit, or None for an empty slot."""
        if not self._count[slot]:
            return None
        cell = slot * self.intervals + (self._head[slot] - 1) % self.intervals
        return self._offsets[cell], self._timestamps[cell], self._lags[cell]

    def read(self, slot: int) -> tuple[list[int], list[int], list[int]]:
        """Offsets, timestamps and lags of the slot, oldest first (empty lists for an empty slot)."""
        n = self.intervals
        count = self._count[slot]
        base = slot * n
        start = (self._head[slot] - count) % n
        if start + count <= n:
            lo, hi = base + start, base + start + count
            return list(self._offsets[lo:hi]), list(self._timestamps[lo:hi]), list(self._lags[lo:hi])
        first = slice(base + start, base + n)
        second = slice(base, base + (start + count - n))
        return (
            list(self._offsets[first]) + list(self._offsets[second]),
            list(self._timestamps[first]) + list(self._timestamps[second]),
            list(self._lags[first]) + list(self._lags[second]),
        )

    def nbytes(self) -> int:
        """Bytes held by the arrays (for the benchmark's bytes-per-group-partition figure)."""
        return sum(a.itemsize * len(a) for a in (self._offsets, self._timestamps, self._lags, self._head, self._count))


class HwmWindows:
    """Rings of (high watermark, sample time ms) per cluster/topic/partition: Burrow's broker-offset ring.

    Each sample advances the ring (Burrow advances on every `offset-refresh` tick, so the ring spans
    `capacity x offset-refresh` seconds). The capacity may exceed the evaluator's `intervals`: Burrow's rules look
    only at the newest `intervals` samples, time lag uses all of them.
    """

    def __init__(self, capacity: int) -> None:
        if not 1 <= capacity <= 65535:
            raise ValueError(f"HWM capacity must be 1-65535, got {capacity}")
        self.capacity = capacity
        self._topics: dict[tuple[str, str], _TopicRing] = {}

    def add(self, cluster: str, topic: str, partition: int, offset: int, timestamp_ms: int) -> None:
        """Record one sample; a partition beyond the known count extends the topic (partitions were added)."""
        ring = self._topics.get((cluster, topic))
        if ring is None:
            ring = self._topics[(cluster, topic)] = _TopicRing(self.capacity)
        if partition >= ring.partitions:
            ring.extend(partition + 1)
        ring.add(partition, offset, timestamp_ms)

    def partition_count(self, cluster: str, topic: str) -> int:
        """Partitions known for the topic from broker samples; 0 when the topic is unknown."""
        ring = self._topics.get((cluster, topic))
        return ring.partitions if ring is not None else 0

    def latest(self, cluster: str, topic: str, partition: int) -> int | None:
        """The newest HWM sample, or None when the partition has none yet."""
        ring = self._topics.get((cluster, topic))
        if ring is None or partition >= ring.partitions:
            return None
        return ring.latest(partition)

    def history(self, cluster: str, topic: str, partition: int) -> tuple[list[int], list[int]]:
        """HWMs and their sample times, oldest first."""
        ring = self._topics.get((cluster, topic))
        if ring is None or partition >= ring.partitions:
            return [], []
        return ring.read(partition)

    def topics(self, cluster: str) -> list[str]:
        return sorted(t for (c, t) in self._topics if c == cluster)

    def clusters(self) -> list[str]:
        return sorted({c for (c, _) in self._topics})

    def delete_topic(self, cluster: str, topic: str) -> None:
        self._topics.pop((cluster, topic), None)


class _TopicRing:
    """The HWM rings of one topic's partitions, in two flat arrays."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.partitions = 0
        self._offsets = array("q")
        self._timestamps = array("q")
        self._head = array("H")
        self._count = array("H")

    def extend(self, partitions: int) -> None:
        extra = partitions - self.partitions
        self._offsets.frombytes(bytes(8 * extra * self.capacity))
        self._timestamps.frombytes(bytes(8 * extra * self.capacity))
        self._head.frombytes(bytes(2 * extra))
        self._count.frombytes(bytes(2 * extra))
        self.partitions = partitions

    def add(self, partition: int, offset: int, timestamp_ms: int) -> None:
        n = self.capacity
        head = self._head[partition]
        cell = partition * n + head
        self._offsets[cell] = offset
        self._timestamps[cell] = timestamp_ms
        self._head[partition] = (head + 1) % n
        if self._count[partition] < n:
            self._count[partition] += 1

    def latest(self, partition: int) -> int | None:
        if not self._count[partition]:
            return None
        return self._offsets[partition * self.capacity + (self._head[partition] - 1) % self.capacity]

    def read(self, partition: int) -> tuple[list[int], list[int]]:
        n = self.capacity
        count = self._count[partition]
        base = partition * n
        start = (self._head[partition] - count) % n
        cells = [base + (start + i) % n for i in range(count)]
        return [self._offsets[c] for c in cells], [self._timestamps[c] for c in cells]
