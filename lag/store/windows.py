"""Fixed-size windows laid out in flat arrays: the last N commits of every group-partition (the last M high
watermarks of every partition live alike in `hwm_windows.py`). Fed by `offsets.py`, read one slot at a time by the
scalar reference and all at once by `evaluate/columnar/block.py`.

Why arrays: an object per commit (Burrow's `container/ring` of `*ConsumerOffset`) costs about 1 KB per group-partition;
here a group-partition is one slot of `intervals` cells in three flat arrays (offset, timestamp and lag, int32 while
they fit, see `arrays.py`) plus a per-slot offset base (int64) and two bytes of ring bookkeeping (130 B at
intervals=10). The arrays are numpy arrays, read whole by the columnar block; the scalar paths (ingestion, one window at
a time) go through memoryviews of them, which index faster than numpy or `array.array`. Growth allocates zeroed memory
and copies only the rows in use.

Ring layout: slot `s` owns cells `[s*N, (s+1)*N)`; `head[s]` is the next cell to write, `count[s]` how many are
filled; the oldest cell is `(head - count) mod N`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lag.store.arrays import (
    GROWTH_MIN_ROWS,
    I32_MAX,
    I32_MIN,
    I64_MAX,
    I64_MIN,
    TRIM_EVERY_ROWS,
    RunAllocator,
    add_row_bases,
    allocate_zeroed,
    fitting_epoch,
    grow_zeroed,
    release_freed_heap,
    stored_range,
    subtract_in_place,
    widen_to_int64,
)

NO_LAG = -1
"""Stored in the lag array when no HWM was known at commit time (Burrow HEAD's `Lag: nil`)."""


class CommitWindows:
    """Rings of (offset, commit timestamp ms, lag at commit) for group-partitions, with Burrow's min-distance merge.

    Offsets are stored as deltas from their slot's base (the slot's first offset, moved when a delta would leave
    int32), timestamps as milliseconds from `epoch_ms` and lags as they are, all three in int32 until a value does
    not fit (`arrays.py`); every read adds the base and the epoch back, so callers see the values pushed.
    """

    def __init__(self, intervals: int, min_distance_ms: int = 0) -> None:
        if not 1 <= intervals <= 255:
            raise ValueError(f"intervals must be 1-255, got {intervals}")
        self.intervals = intervals
        self.min_distance_ms = min_distance_ms
        self.epoch_ms = 0
        """Stored timestamps are `timestamp_ms - epoch_ms`."""
        self._time_low, self._time_high = I32_MIN, I32_MAX
        self._offsets_based = True
        """Offsets are int32 deltas from their slot's base; False once widened to int64 (their bases are then 0)."""
        self._arrays: tuple[np.ndarray[Any, Any], ...] = ()
        self._runs = RunAllocator()
        self._next_trim = TRIM_EVERY_ROWS
        self._resize(0)

    def _resize(self, slots: int) -> None:
        cells = slots * self.intervals
        if self._arrays:
            used = self._runs.used
            wide = (grow_zeroed(a, cells, used * self.intervals) for a in self._arrays[:3])
            narrow = (grow_zeroed(a, slots, used) for a in self._arrays[3:])
            self._arrays = (*wide, *narrow)
        else:
            self._arrays = (
                allocate_zeroed(cells, np.int32),
                allocate_zeroed(cells, np.int32),
                allocate_zeroed(cells, np.int32),
                allocate_zeroed(slots, np.uint8),
                allocate_zeroed(slots, np.uint8),
                allocate_zeroed(slots, np.int64),
            )
        self._views()

    def _views(self) -> None:
        views = [memoryview(a) for a in self._arrays]  # type: ignore[arg-type]
        self._offsets, self._timestamps, self._lags, self._head, self._count, self._bases = views

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
            return base
        if base + n > self.capacity:
            self._resize(max(base + n, 2 * self.capacity, GROWTH_MIN_ROWS))
        if base + n >= self._next_trim:
            release_freed_heap()
            self._next_trim = base + n + TRIM_EVERY_ROWS
        return base

    def release(self, base: int, n: int) -> None:
        """Give a run back for reuse (a group or topic was deleted); its cells no longer count as in use."""
        self._arrays[4][base : base + n] = 0
        self._runs.give_back(base, n)

    def push(self, slot: int, offset: int, timestamp_ms: int, lag: int) -> bool:
        """Store a commit; returns True when it was merged into the previous cell.

        Burrow's min-distance merge: a commit less than `min_distance_ms` after the newest stored commit overwrites that
        cell's offset and lag but keeps its timestamp, so cells stay at least min-distance apart and their timestamps
        are bucket starts (`core/internal/storage/inmemory.go`). Burrow compares with `<`, so with min-distance 0 only a
        commit whose timestamp goes backwards merges.
        """
        stored = timestamp_ms - self.epoch_ms  # may not fit the column yet: the writes below fall back to `_fit`
        n = self.intervals
        head = self._head[slot]
        count = self._count[slot]
        base = slot * n
        if count:
            prev = base + (head - 1) % n
            if stored - self._timestamps[prev] < self.min_distance_ms:  # a difference: the same from any epoch
                try:
                    self._lags[prev] = lag
                    self._offsets[prev] = offset - self._bases[slot]
                except ValueError:
                    self._store_slow(slot, prev, offset, None, lag)
                return True
        elif self._offsets_based:  # an empty window: its first offset is its base
            self._bases[slot] = offset
        cell = base + head
        try:  # what does not fit int32 (or int64) raises before the head moves: no reader sees the cell
            self._timestamps[cell] = stored
            self._lags[cell] = lag
            self._offsets[cell] = offset - self._bases[slot]
        except ValueError:
            self._store_slow(slot, cell, offset, timestamp_ms, lag)
        self._head[slot] = (head + 1) % n
        if count < n:
            self._count[slot] = count + 1
        return False

    def _store_slow(self, slot: int, cell: int, offset: int, timestamp_ms: int | None, lag: int) -> None:
        """Write a cell whose timestamp (None: kept, a merge), lag or offset did not fit its column, after making
        room for it."""
        if timestamp_ms is None:
            self._fit_lag(lag)
        else:
            self._timestamps[cell] = self._fit(timestamp_ms, lag)
        self._lags[cell] = lag
        try:
            self._offsets[cell] = offset - self._bases[slot]
        except ValueError:
            self._offsets[cell] = self._fit_offset(slot, offset)

    def _fit(self, timestamp_ms: int, lag: int) -> int:
        """Make room for a commit whose timestamp or lag may not fit the columns; returns the timestamp as stored."""
        self._fit_lag(lag)
        stored = timestamp_ms - self.epoch_ms
        if self._time_low <= stored <= self._time_high:
            return stored
        return self._fit_time(timestamp_ms)

    def _fit_lag(self, lag: int) -> None:
        if not I32_MIN <= lag <= I32_MAX and self._arrays[2].dtype != np.int64:
            self._widen_lags()

    def _fit_time(self, timestamp_ms: int) -> int:
        """Move the epoch so that `timestamp_ms` and every stored timestamp fit int32, or widen the timestamps to
        int64 (epoch 0) when their span is too wide; returns `timestamp_ms` as stored."""
        n, rows = self.intervals, self._runs.used
        offsets, times, lags, head, count, bases = self._arrays
        held = stored_range(times, head, count, n, rows)
        low, high = (timestamp_ms, timestamp_ms) if held is None else (held[0] + self.epoch_ms, held[1] + self.epoch_ms)
        epoch = fitting_epoch(min(low, timestamp_ms), max(high, timestamp_ms))
        if epoch is None:
            times = widen_to_int64(times, self.epoch_ms, rows * n)
            self.epoch_ms, self._time_low, self._time_high = 0, I64_MIN, I64_MAX
        else:
            subtract_in_place(times, epoch - self.epoch_ms, rows * n)
            self.epoch_ms = epoch
        self._arrays = (offsets, times, lags, head, count, bases)
        self._views()
        return timestamp_ms - self.epoch_ms

    def _widen_lags(self) -> None:
        """A lag beyond int32: the lags become int64 for good."""
        offsets, times, lags, head, count, bases = self._arrays
        self._arrays = (offsets, times, widen_to_int64(lags, 0, self._runs.used * self.intervals), head, count, bases)
        self._views()

    def _fit_offset(self, slot: int, offset: int) -> int:
        """Move the slot's base so that `offset` and the slot's stored offsets are int32 deltas from it, or widen
        the offsets to int64 (bases 0) when their span is too wide; returns `offset` as stored."""
        if not self._offsets_based:
            raise ValueError(f"offset {offset} does not fit int64")
        n, count, base = self.intervals, self._count[slot], self._bases[slot]
        cells = [slot * n + (self._head[slot] - count + i) % n for i in range(count)]
        held = [self._offsets[c] + base for c in cells]
        new_base = fitting_epoch(min([*held, offset]), max([*held, offset]))
        if new_base is None or not I64_MIN <= new_base <= I64_MAX:
            self._widen_offsets()
            return offset
        for c, value in zip(cells, held, strict=True):
            self._offsets[c] = value - new_base
        self._bases[slot] = new_base
        return offset - new_base

    def _widen_offsets(self) -> None:
        """An offset span beyond int32 in one window: the offsets become int64 values for good, their bases 0."""
        offsets, times, lags, head, count, bases = self._arrays
        wide = add_row_bases(offsets, bases, self.intervals, self._runs.used)
        bases[:] = 0
        self._arrays = (wide, times, lags, head, count, bases)
        self._offsets_based = False
        self._views()

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
        return self._offsets[cell] + self._bases[slot], self._timestamps[cell] + self.epoch_ms, self._lags[cell]

    def read(self, slot: int) -> tuple[list[int], list[int], list[int]]:
        """Offsets, timestamps and lags of the slot, oldest first (empty lists for an empty slot)."""
        n = self.intervals
        count = self._count[slot]
        base = slot * n
        start = (self._head[slot] - count) % n
        epoch, offset_base = self.epoch_ms, self._bases[slot]
        if start + count <= n:
            lo, hi = base + start, base + start + count
            times = [t + epoch for t in self._timestamps[lo:hi].tolist()]
            return [o + offset_base for o in self._offsets[lo:hi].tolist()], times, self._lags[lo:hi].tolist()
        first = slice(base + start, base + n)
        second = slice(base, base + (start + count - n))
        return (
            [o + offset_base for o in self._offsets[first].tolist() + self._offsets[second].tolist()],
            [t + epoch for t in self._timestamps[first].tolist() + self._timestamps[second].tolist()],
            self._lags[first].tolist() + self._lags[second].tolist(),
        )

    def buffers(self) -> tuple[np.ndarray[Any, Any], ...]:
        """The rings as numpy arrays, read only: per cell `slot * intervals + i` offsets less their slot's base,
        timestamps less `epoch_ms` and lags (int32, or int64 once a value needed it); per slot head and count
        (uint8). `cells` and `add_bases` read them as the values pushed."""
        return self._arrays[:5]

    def cells(self, cells: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        """Offsets, timestamps and lags (int64, as pushed) of the flat cell indexes `cells`, in their shape; each row
        of a 2-D `cells` lies in one slot's ring (as `columnar/block.py` gathers them)."""
        offsets, times, lags, bases = *self._arrays[:3], self._arrays[5]
        n = self.intervals
        if cells.ndim == 2 and cells.shape[1]:
            slot_base = bases.take(cells[:, 0] // n)[:, None]
        else:
            slot_base = bases.take(cells // n)
        # a cast copy, then an add in place: faster than one add of mixed types (docs/benchmarks.md)
        values = offsets.take(cells).astype(np.int64, copy=False)
        values += slot_base
        stamps = times.take(cells).astype(np.int64, copy=False)
        stamps += self.epoch_ms
        return values, stamps, lags.take(cells).astype(np.int64, copy=False)

    def add_bases(self, deltas: np.ndarray[Any, Any], slots: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Offsets as pushed (int64) from `deltas` (rows, k) read from the offsets of `buffers`, row r from slot
        `slots[r]`."""
        # each row's base repeated, then the deltas added in place: faster than a cast copy plus an add, or one add
        # of mixed types (about 14 against 16-17 ms per 1,000,000 rows of 10 in blocks of 32,768)
        values: np.ndarray[Any, Any] = self._arrays[5].take(slots).repeat(deltas.shape[1]).reshape(deltas.shape)
        values += deltas
        return values

    def nbytes(self) -> int:
        """Bytes of the slots handed out so far (capacity beyond them is mapped zeroed and not touched)."""
        cell = sum(int(a.dtype.itemsize) for a in self._arrays[:3])
        return self._runs.used * (cell * self.intervals + 2 + 8)
