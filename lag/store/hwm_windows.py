"""The last M high watermarks of every partition, in flat arrays as the commit windows of `windows.py` are: one
ring row per partition, a topic a run of rows. Fed by the HWM rounds through `offsets.py`; read by the evaluation
(time lag, Burrow's rules) and the page-cache estimate (produce rates from the history).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lag.store.arrays import GROWTH_MIN_ROWS, RunAllocator, allocate_zeroed, grow_zeroed


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
            self._arrays = tuple(grow_zeroed(a, cells if a.dtype == np.int64 else rows) for a in self._arrays)
        else:
            wide, narrow = (
                (allocate_zeroed(cells, np.int64) for _ in range(2)),
                (allocate_zeroed(rows, np.uint16) for _ in range(2)),
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
            self._resize(max(base + partitions, 2 * self._rows, GROWTH_MIN_ROWS))
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
        row), for `columnar/block.py`; read only."""
        return self._arrays

    def topic_rows(self) -> tuple[list[int], list[int]]:
        """Per topic id: first row and partitions (0 for a free id); read only."""
        return self._base, self._partitions
