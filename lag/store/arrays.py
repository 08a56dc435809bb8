"""The flat arrays the windows of `windows.py` and `hwm_windows.py` live in: runs of rows handed out and reused,
zeroed arrays grown with their rows in use, and the helpers that keep commit timestamps and lags in 32 bits while
they fit (numpy). Each helper is named for what it does to the arrays it is given.

Why numpy's zeroed allocation and not anonymous mappings: a mapping would keep capacity not yet used and freed old
arrays out of RSS (about 24 B a group-partition at 1,000,000 once glibc serves the grown arrays from its heap), but
evaluation read it 25 % slower (measured in docs/benchmarks.md), so the windows keep numpy's allocator and
`release_freed_heap` hands those pages back instead.

Why 32 bits: at intervals=10 a commit cell was three int64 (24 B); a timestamp kept as milliseconds from a store
epoch, an offset kept as a delta from its slot's base (8 B a slot) and a lag fit int32 in any normal run (49 days of
timestamps around the epoch, a window's offsets within 2**31 of each other, lags under 2**31 records), so a cell is
12 B. When a value does not fit, the timestamps are rebased (moved to a new epoch), the slot's offsets are rebased
(its base moved), or the column is widened to int64 for good: values are always exact, only the memory changes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
_CHUNK_ROWS = 1 << 16
"""Rows per step of a rebase or a widening, so their temporary int64 copies stay a few MB."""


GROWTH_MIN_ROWS = 1024
"""Rows a window array grows to at least, so the first commits do not resize it one row at a time."""
TRIM_EVERY_ROWS = 1 << 16
"""Rows handed out between two `release_freed_heap` calls while the arrays grow."""


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    trim: Callable[[int], int] | None = getattr(ctypes.CDLL(None), "malloc_trim", None)
    return trim


def release_freed_heap() -> bool:
    """Give the OS back the free pages inside malloc's heap (glibc's `malloc_trim`; nothing where it is missing).

    Why: once numpy frees a grown array that glibc had mapped, glibc raises its mmap threshold, serves the next
    arrays of the store (up to 32 MB) from its heap and keeps the pages of the ones freed by later growth resident:
    about 24 B a group of one partition at 1,000,000 (docs/benchmarks.md). A call takes milliseconds; made every
    `TRIM_EVERY_ROWS` rows while the store grows, it costs nothing measurable per commit. Returns whether the C
    library has it.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    return trim is not None


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


def allocate_zeroed(size: int, dtype: Any) -> np.ndarray[Any, Any]:
    """A zeroed array (numpy's calloc: pages not yet written are not resident while they come fresh from the OS)."""
    return np.zeros(size, dtype=np.dtype(dtype))


def grow_zeroed(old: np.ndarray[Any, Any], size: int, used: int | None = None) -> np.ndarray[Any, Any]:
    """A zeroed array of `size` items starting with `old`'s first `used` (default: all of them)."""
    new = allocate_zeroed(size, old.dtype)
    keep = len(old) if used is None else min(used, len(old))
    new[:keep] = old[:keep]
    return new


def valid_cells(head: np.ndarray[Any, Any], count: np.ndarray[Any, Any], n: int) -> np.ndarray[Any, Any]:
    """(rows, n) mask of the ring cells that hold a value: the `count` cells before `head` (mod n) of each row."""
    age = (head.astype(np.int64)[:, None] - 1 - np.arange(n)[None, :]) % n
    mask: np.ndarray[Any, Any] = age < count.astype(np.int64)[:, None]
    return mask


def stored_range(
    values: np.ndarray[Any, Any], head: np.ndarray[Any, Any], count: np.ndarray[Any, Any], n: int, rows: int
) -> tuple[int, int] | None:
    """(min, max) of the values in use of the first `rows` rings, None when no ring holds any."""
    low: int | None = None
    high: int | None = None
    for start in range(0, rows, _CHUNK_ROWS):
        stop = min(rows, start + _CHUNK_ROWS)
        mask = valid_cells(head[start:stop], count[start:stop], n)
        if not mask.any():
            continue
        held = values[start * n : stop * n].reshape(-1, n)[mask]
        chunk_low, chunk_high = int(held.min()), int(held.max())
        low = chunk_low if low is None else min(low, chunk_low)
        high = chunk_high if high is None else max(high, chunk_high)
    return None if low is None or high is None else (low, high)


def subtract_in_place(values: np.ndarray[Any, Any], by: int, cells: int) -> None:
    """Subtract `by` from the first `cells` values in place, clipping to the dtype's range (the cells in use are
    checked to fit by the caller; the others hold nothing that is read)."""
    bounds = np.iinfo(values.dtype)
    for start in range(0, cells, _CHUNK_ROWS * 16):
        stop = min(cells, start + _CHUNK_ROWS * 16)
        moved = values[start:stop].astype(np.int64) - by
        np.clip(moved, bounds.min, bounds.max, out=moved)
        values[start:stop] = moved


def widen_to_int64(values: np.ndarray[Any, Any], add: int, cells: int) -> np.ndarray[Any, Any]:
    """An int64 copy of `values` with `add` added to the first `cells` (the rest stay zero)."""
    wide = allocate_zeroed(len(values), np.int64)
    for start in range(0, cells, _CHUNK_ROWS * 16):
        stop = min(cells, start + _CHUNK_ROWS * 16)
        wide[start:stop] = values[start:stop].astype(np.int64) + add
    return wide


def add_row_bases(values: np.ndarray[Any, Any], bases: np.ndarray[Any, Any], n: int, rows: int) -> np.ndarray[Any, Any]:
    """An int64 copy of `values` (rows of `n`) with each of the first `rows` rows' base added (the rest stay zero);
    a cell not in use may wrap around, which no reader sees."""
    wide = allocate_zeroed(len(values), np.int64)
    for start in range(0, rows, _CHUNK_ROWS):
        stop = min(rows, start + _CHUNK_ROWS)
        block = wide[start * n : stop * n].reshape(-1, n)
        np.add(values[start * n : stop * n].reshape(-1, n), bases[start:stop, None], out=block, dtype=np.int64)
    return wide


def fitting_epoch(low: int, high: int) -> int | None:
    """An epoch that puts every timestamp of [low, high] in int32 with the most room after `high` (2**30 ms, about
    12 days, when the span allows, so a rebase is rare), or None when the span is wider than int32."""
    if high - low > I32_MAX - I32_MIN:
        return None
    epoch = high - 2**30
    if low - epoch < I32_MIN:
        epoch = low - I32_MIN
    return epoch
