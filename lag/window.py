"""Fixed-size windows laid out in flat arrays: the last N commits of every group-partition and the last M high
watermarks of every partition. Fed by `store.py`, read one slot at a time by `evaluator.py` and all at once by
`columns.py`.

Why arrays: an object per commit (Burrow's `container/ring` of `*ConsumerOffset`) costs about 1 KB per
group-partition; here a group-partition is one slot of `intervals` int64 triples in three flat arrays plus two
bytes of ring bookkeeping (242 B at intervals=10). The arrays are numpy arrays, read whole by `columns.py`; the
scalar paths (ingestion, one window at a time) go through memoryviews of them, which index faster than numpy or
`array.array`. Growth allocates zeroed memory (calloc), so capacity not yet used is not resident, and copies only
the rows in use.

Ring layout: slot `s` owns cells `[s*N, (s+1)*N)`; `head[s]` is the next cell to write, `count[s]` how many are
filled; the oldest cell is `(head - count) mod N`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NO_LAG = -1
"""Stored in the lag array when no HWM was known at commit time (Burrow HEAD's `Lag: nil`)."""

_GROWTH_MIN_ROWS = 1024


def _grown(old: np.ndarray[Any, Any], size: int) -> np.ndarray[Any, Any]:
    """A zeroed array of `size` items starting with `old`'s."""
    new = np.zeros(size, dtype=old.dtype)
    new[: len(old)] = old
    return new


class RunAllocator:
    """Hands out contiguous runs of rows (one run per group/topic or per topic, one row per partition) and reuses
    released runs by size, so an index needs one entry per run rather than per row."""

    def __init__(self) -> None:
        self.used = 0
        """Rows handed out so far (the high-water mark of the arrays in use)."""
        self._free: dict[int, list[int]] = {}

    def take(self, n: int) -> tuple[int, bool]:
        """(first row, reused): a released run of `n` rows when there is one, else `n` rows past the end."""
        reusable = self._free.get(n)
        if reusable:
            return reusable.pop(), True
        base = self.used
        self.used = base + n
        return base, False

    def give_back(self, base: int, n: int) -> None:
        self._free.setdefault(n, []).append(base)


class CommitWindows:
    """Rings of (offset, commit timestamp ms, lag at commit) for group-partitions, with Burrow's min-distance merge."""

    def __init__(self, intervals: int, min_distance_ms: int = 0) -> None:
        if not 1 <= intervals <= 255:
            raise ValueError(f"intervals must be 1-255, got {intervals}")
        self.intervals = intervals
        self.min_distance_ms = min_distance_ms
        self._arrays: tuple[np.ndarray[Any, Any], ...] = ()
        self._resize(0)
        self._runs = RunAllocator()

    def _resize(self, slots: int) -> None:
        cells = slots * self.intervals
        if self._arrays:
            self._arrays = tuple(_grown(a, cells if a.dtype == np.int64 else slots) for a in self._arrays)
        else:
            wide, narrow = (
                (np.zeros(cells, dtype=np.int64) for _ in range(3)),
                (np.zeros(slots, dtype=np.uint8) for _ in range(2)),
            )
            self._arrays = (*wide, *narrow)
        views = [memoryview(a) for a in self._arrays]  # type: ignore[arg-type]
        self._offsets, self._timestamps, self._lags, self._head, self._count = views

    @property
    def capacity(self) -> int:
        return len(self._head)

    def allocate(self, n: int) -> int:
        """A run of `n` empty slots; returns the first slot's index."""
        base, reused = self._runs.take(n)
        if reused:
            for slot in range(base, base + n):
                self._head[slot] = 0
                self._count[slot] = 0
        elif base + n > self.capacity:
            self._resize(max(base + n, 2 * self.capacity, _GROWTH_MIN_ROWS))
        return base

    def release(self, base: int, n: int) -> None:
        """Give a run back for reuse (a group or topic was deleted)."""
        self._runs.give_back(base, n)

    def push(self, slot: int, offset: int, timestamp_ms: int, lag: int) -> bool:
        """Store a commit; returns True when it was merged into the previous cell.

        Burrow's min-distance merge: a commit less than `min_distance_ms` after the newest stored commit overwrites that
        cell's offset and lag but keeps its timestamp, so cells stay at least min-distance apart and their timestamps
        are bucket starts (`core/internal/storage/inmemory.go`). Burrow compares with `<`, so with min-distance 0 only a
        commit whose timestamp goes backwards merges.
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
            return self._offsets[lo:hi].tolist(), self._timestamps[lo:hi].tolist(), self._lags[lo:hi].tolist()
        first = slice(base + start, base + n)
        second = slice(base, base + (start + count - n))
        return (
            self._offsets[first].tolist() + self._offsets[second].tolist(),
            self._timestamps[first].tolist() + self._timestamps[second].tolist(),
            self._lags[first].tolist() + self._lags[second].tolist(),
        )

    def buffers(self) -> tuple[np.ndarray[Any, Any], ...]:
        """The rings as numpy arrays (offsets, timestamps, lags: int64 `slot * intervals + cell`; head, count: uint8
        per slot), for `columns.py`; read only."""
        return self._arrays

    def nbytes(self) -> int:
        """Bytes of the slots handed out so far (capacity beyond them is allocated zeroed and not touched)."""
        return self._runs.used * (24 * self.intervals + 2)


class HwmWindows:
    """Rings of (high watermark, sample time ms) per cluster/topic/partition: Burrow's broker-offset ring.

    Each sample advances the ring (Burrow advances on every `offset-refresh` tick, so the ring spans
    `capacity x offset-refresh` seconds). The capacity may exceed the evaluator's `intervals`: Burrow's rules look
    only at the newest `intervals` samples, time lag uses all of them. A topic is a run of rows, one per partition,
    in the same flat arrays as every other topic; its id (`topic_id`) also names it in the store's group index.
    """

    def __init__(self, capacity: int) -> None:
        if not 1 <= capacity <= 65535:
            raise ValueError(f"HWM capacity must be 1-65535, got {capacity}")
        self.capacity = capacity
        self._ids: dict[str, dict[str, int]] = {}
        """cluster -> topic -> topic id."""
        self._names: list[tuple[str, str] | None] = []
        """topic id -> (cluster, topic); None for a free id."""
        self._free_ids: list[int] = []
        self._base: list[int] = []
        """topic id -> first row."""
        self._partitions: list[int] = []
        """topic id -> partitions known (rows in its run)."""
        self._rows = 0
        self._arrays: tuple[np.ndarray[Any, Any], ...] = ()
        self._resize(0)
        self._runs = RunAllocator()

    def _resize(self, rows: int) -> None:
        cells = rows * self.capacity
        if self._arrays:
            self._arrays = tuple(_grown(a, cells if a.dtype == np.int64 else rows) for a in self._arrays)
        else:
            wide, narrow = (
                (np.zeros(cells, dtype=np.int64) for _ in range(2)),
                (np.zeros(rows, dtype=np.uint16) for _ in range(2)),
            )
            self._arrays = (*wide, *narrow)
        self._rows = rows
        views = [memoryview(a) for a in self._arrays]  # type: ignore[arg-type]
        self._offsets, self._timestamps, self._head, self._count = views

    def topic_id(self, cluster: str, topic: str) -> int | None:
        topics = self._ids.get(cluster)
        return topics.get(topic) if topics is not None else None

    def topic_name(self, topic_id: int) -> str:
        name = self._names[topic_id]
        if name is None:
            raise KeyError(f"topic id {topic_id} is not in use")
        return name[1]

    def add(self, cluster: str, topic: str, partition: int, offset: int, timestamp_ms: int) -> None:
        """Record one sample; a partition beyond the known count extends the topic (partitions were added)."""
        tid = self.topic_id(cluster, topic)
        if tid is None:
            tid = self._new_topic(cluster, topic)
        if partition >= self._partitions[tid]:
            self._extend(tid, partition + 1)
        row = self._base[tid] + partition
        n = self.capacity
        head = self._head[row]
        cell = row * n + head
        self._offsets[cell] = offset
        self._timestamps[cell] = timestamp_ms
        self._head[row] = (head + 1) % n
        if self._count[row] < n:
            self._count[row] += 1

    def _new_topic(self, cluster: str, topic: str) -> int:
        if self._free_ids:
            tid = self._free_ids.pop()
            self._names[tid] = (cluster, topic)
        else:
            tid = len(self._names)
            self._names.append((cluster, topic))
            self._base.append(0)
            self._partitions.append(0)
        self._base[tid] = 0
        self._partitions[tid] = 0
        self._ids.setdefault(cluster, {})[topic] = tid
        return tid

    def _extend(self, tid: int, partitions: int) -> None:
        """Move the topic to a run of `partitions` rows, keeping the rings it had."""
        old_base, old_n = self._base[tid], self._partitions[tid]
        base, reused = self._runs.take(partitions)
        if not reused and base + partitions > self._rows:
            self._resize(max(base + partitions, 2 * self._rows, _GROWTH_MIN_ROWS))
        n = self.capacity
        offsets, timestamps, head, count = self._arrays
        offsets[base * n : (base + old_n) * n] = offsets[old_base * n : (old_base + old_n) * n]
        timestamps[base * n : (base + old_n) * n] = timestamps[old_base * n : (old_base + old_n) * n]
        head[base : base + old_n] = head[old_base : old_base + old_n]
        count[base : base + old_n] = count[old_base : old_base + old_n]
        head[base + old_n : base + partitions] = 0
        count[base + old_n : base + partitions] = 0
        if old_n:
            self._runs.give_back(old_base, old_n)
        self._base[tid], self._partitions[tid] = base, partitions

    def probe(self, cluster: str, topic: str, partition: int) -> tuple[int, int, int | None]:
        """(topic id, partitions known, newest HWM of the partition or None) in one call, for `add_commit`;
        (-1, 0, None) for an unknown topic."""
        topics = self._ids.get(cluster)
        tid = topics.get(topic) if topics is not None else None
        if tid is None:
            return -1, 0, None
        partitions = self._partitions[tid]
        if not 0 <= partition < partitions:
            return tid, partitions, None
        row = self._base[tid] + partition
        if not self._count[row]:
            return tid, partitions, None
        n = self.capacity
        return tid, partitions, self._offsets[row * n + (self._head[row] - 1) % n]

    def partition_count(self, cluster: str, topic: str) -> int:
        """Partitions known for the topic from broker samples; 0 when the topic is unknown."""
        tid = self.topic_id(cluster, topic)
        return self._partitions[tid] if tid is not None else 0

    def row(self, topic_id: int, partition: int) -> int | None:
        """The ring row of a partition, or None beyond the topic's known partitions."""
        return self._base[topic_id] + partition if 0 <= partition < self._partitions[topic_id] else None

    def latest_in_row(self, row: int) -> int | None:
        if not self._count[row]:
            return None
        return self._offsets[row * self.capacity + (self._head[row] - 1) % self.capacity]

    def latest(self, cluster: str, topic: str, partition: int) -> int | None:
        """The newest HWM sample, or None when the partition has none yet."""
        tid = self.topic_id(cluster, topic)
        row = self.row(tid, partition) if tid is not None else None
        return self.latest_in_row(row) if row is not None else None

    def history_of_row(self, row: int) -> tuple[list[int], list[int]]:
        """HWMs and their sample times of a ring row, oldest first."""
        n = self.capacity
        count = self._count[row]
        base = row * n
        start = (self._head[row] - count) % n
        if start + count <= n:
            lo, hi = base + start, base + start + count
            return self._offsets[lo:hi].tolist(), self._timestamps[lo:hi].tolist()
        first, second = slice(base + start, base + n), slice(base, base + (start + count - n))
        return (
            self._offsets[first].tolist() + self._offsets[second].tolist(),
            self._timestamps[first].tolist() + self._timestamps[second].tolist(),
        )

    def history(self, cluster: str, topic: str, partition: int) -> tuple[list[int], list[int]]:
        """HWMs and their sample times, oldest first."""
        tid = self.topic_id(cluster, topic)
        row = self.row(tid, partition) if tid is not None else None
        return self.history_of_row(row) if row is not None else ([], [])

    def topics(self, cluster: str) -> list[str]:
        return sorted(self._ids.get(cluster, ()))

    def clusters(self) -> list[str]:
        return sorted(c for c, topics in self._ids.items() if topics)

    def delete_topic(self, cluster: str, topic: str) -> int | None:
        """Forget a topic; returns its former id (the store drops the groups' windows on it), None if unknown."""
        topics = self._ids.get(cluster)
        tid = topics.pop(topic, None) if topics is not None else None
        if tid is None:
            return None
        if self._partitions[tid]:
            self._runs.give_back(self._base[tid], self._partitions[tid])
        self._names[tid] = None
        self._partitions[tid] = 0
        self._free_ids.append(tid)
        return tid

    def buffers(self) -> tuple[np.ndarray[Any, Any], ...]:
        """The rings as numpy arrays (offsets, timestamps: int64 `row * capacity + cell`; head, count: uint16 per
        row), for `columns.py`; read only."""
        return self._arrays

    def topic_rows(self) -> tuple[list[int], list[int]]:
        """Per topic id: first row and partitions (0 for a free id); read only."""
        return self._base, self._partitions
