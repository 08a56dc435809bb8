"""Window columns: the commit windows and HWM histories of many group-partitions, gathered from the store's flat
arrays into numpy blocks for `columnar/rules.py`; and the partition index of a set of groups (which slots, in which
order, on which HWM rows) that the evaluator walks.

Block layout: row r is one group-partition; its columns are a ring read from column `oldest[r]` round to column
`oldest[r] - 1`, its newest. A full window is copied as the store's ring holds it (`oldest` is the ring's head), so
the common case costs one row copy and no un-rotation; a short window is laid out oldest first and right-aligned
(`oldest` 0, the newest commit in the last column), and the cells before its oldest commit repeat it ("edge
padding"). Repeating the oldest value changes none of the rule predicates (a repeated offset is no rewind and no
progress, a repeated lag no decrease, a repeated HWM no new minimum), which lets them run over whole rows without
masks; the predicates that need the commits in order read them through `oldest` (`columnar/rules.py`). HWM histories
belong to topic-partitions, which many groups share, so the HWM block holds each distinct history once (`hwm_row`
maps a group-partition to it), padded the same way; `hwm_count` says how many of its columns are real, and two
flags say whether its offsets and times never go down (the normal case, which the rules search by bisection).
A block of commit windows is `intervals` wide once one of them is full, else trimmed to the longest window present;
an HWM block is trimmed to the longest history present, so a block of one-sample histories is one column wide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lag.evaluate.rules import Window
from lag.store.offsets import OffsetStore

I64 = NDArray[np.int64]
Ints = NDArray[np.signedinteger[Any]]
"""int32 or int64: a column as the store keeps it (`arrays.py` widens a column to int64 when a value needs it)."""
_FEW_GROUPS = 16
"""Up to this many groups (a status request), `partition_index` follows their run chains rather than scanning the
store's run arrays, whose length grows with every group."""


@dataclass(frozen=True, slots=True)
class WindowColumns:
    """The inputs of the rules for a block of group-partitions (see the module docstring for the layout)."""

    offsets: I64
    """(rows, n) committed offsets."""
    stored_times: Ints
    """(rows, n) commit timestamps less `epoch_ms` (ms), as the store keeps them (the rules compare them with times
    less the epoch, so that a block needs no int64 copy)."""
    epoch_ms: int
    lags: Ints
    """(rows, n) lag at ingest, as the store keeps them; NO_LAG (-1) when unknown."""
    count: I64
    """(rows,) commits in the window; 0 for a placeholder partition."""
    oldest: I64
    """(rows,) the column of the oldest commit; the row runs from there to its end, then from column 0 to the newest
    commit in column `oldest - 1` (0 for a row laid out oldest first)."""
    last_offset: I64
    """(rows,) the newest commit's offset."""
    first_ts_ms: I64
    """(rows,) the oldest commit's timestamp (ms)."""
    last_ts_ms: I64
    """(rows,) the newest commit's timestamp (ms)."""
    hwm_row: I64
    """(rows,) the partition's history in the HWM arrays below."""
    hwm_offsets: I64
    """(histories, m) HWM samples."""
    hwm_times_ms: I64
    """(histories, m) their sample times (ms)."""
    hwm_count: I64
    """(histories,) real HWM samples; 0 for a partition with none."""
    hwm_offsets_sorted: NDArray[np.bool_]
    """(histories,) the samples never go down."""
    hwm_times_sorted: NDArray[np.bool_]
    """(histories,) the sample times never go down."""

    def __len__(self) -> int:
        return len(self.count)


@dataclass(frozen=True, slots=True)
class PartitionIndex:
    """The group-partitions of some groups, group after group, topics by name, partitions in order (the order in
    which Burrow lists them and in which `aggregate` breaks ties)."""

    gids: I64
    """(groups,) group ids."""
    starts: I64
    """(groups + 1,) group g owns partitions [starts[g], starts[g+1])."""
    slots: I64
    """(partitions,) commit-window slot."""
    topic_ids: I64
    """(partitions,) topic id."""
    partitions: I64
    """(partitions,) partition number."""
    hwm_rows: I64
    """(partitions,) HWM ring row; -1 when the topic has no row for the partition."""


def partition_index(store: OffsetStore, gids: Sequence[int] | I64) -> PartitionIndex:
    """The index of the given groups' partitions, from the store's run arrays."""
    gid_arr = np.asarray(gids, dtype=np.int64)
    run_group_buf, run_topic_buf, run_base_buf, run_parts_buf = store.run_buffers()
    if len(gid_arr) == 0 or len(run_group_buf) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return PartitionIndex(gid_arr, np.zeros(len(gid_arr) + 1, dtype=np.int64), empty, empty, empty, empty)
    if len(gid_arr) <= _FEW_GROUPS:  # a status request: walk the groups' runs instead of every run of the store
        chains = [(i, r) for i, gid in enumerate(gids) for r in store.group_runs(gid)]
        run_pos = np.array([i for i, _ in chains], dtype=np.int64)
        runs_list = [r for _, r in chains]
        run_topic = np.array([run_topic_buf[r] for r in runs_list], dtype=np.int64)
        run_base = np.array([run_base_buf[r] for r in runs_list], dtype=np.int64)
        run_parts = np.array([run_parts_buf[r] for r in runs_list], dtype=np.int64)
    else:
        run_group = np.array(run_group_buf, dtype=np.int64)
        position = np.full(max(int(run_group.max()), int(gid_arr.max())) + 1, -1, dtype=np.int64)
        position[gid_arr] = np.arange(len(gid_arr))
        live = run_group >= 0
        runs = np.flatnonzero(live & (position[np.where(live, run_group, 0)] >= 0))
        run_pos = position[run_group[runs]]
        run_topic = np.array(run_topic_buf, dtype=np.int64)[runs]
        run_base = np.array(run_base_buf, dtype=np.int64)[runs]
        run_parts = np.array(run_parts_buf, dtype=np.int64)[runs]
    if not len(run_pos):
        empty = np.zeros(0, dtype=np.int64)
        return PartitionIndex(gid_arr, np.zeros(len(gid_arr) + 1, dtype=np.int64), empty, empty, empty, empty)
    # order: group position, then topic name
    topic_ids = np.unique(run_topic)
    names = [store.hwms.topic_name(int(t)) for t in topic_ids]
    rank = np.empty(len(topic_ids), dtype=np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    order = np.lexsort((rank[np.searchsorted(topic_ids, run_topic)], run_pos))
    run_pos, run_topic, run_base, run_parts = run_pos[order], run_topic[order], run_base[order], run_parts[order]
    # one row per partition
    total = int(run_parts.sum())
    run_of = np.repeat(np.arange(len(run_parts)), run_parts)
    first = np.cumsum(run_parts) - run_parts
    partition = np.arange(total, dtype=np.int64) - first[run_of]
    hwm_base_list, hwm_parts_list = store.hwms.topic_rows()
    hwm_base = np.array(hwm_base_list, dtype=np.int64)
    hwm_parts = np.array(hwm_parts_list, dtype=np.int64)
    tid = run_topic[run_of]
    hwm_rows = np.where(partition < hwm_parts[tid], hwm_base[tid] + partition, -1)
    per_group = np.bincount(run_pos, weights=run_parts, minlength=len(gid_arr)).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(per_group)))
    return PartitionIndex(gid_arr, starts, run_base[run_of] + partition, tid, partition, hwm_rows)


@dataclass(frozen=True, slots=True)
class HwmHistories:
    """Distinct HWM histories, gathered once for all the blocks of an evaluation (see `WindowColumns`)."""

    offsets: I64
    times_ms: I64
    count: I64
    offsets_sorted: NDArray[np.bool_]
    times_sorted: NDArray[np.bool_]


def gather_histories(store: OffsetStore, hwm_rows: I64) -> tuple[HwmHistories, I64]:
    """The distinct histories of `hwm_rows` (-1: none) and, per entry of `hwm_rows`, which one is its."""
    h_all_offsets, h_all_times, h_all_head, h_all_count = store.hwms.buffers()
    distinct, history = unique_ints(np.where(hwm_rows >= 0, hwm_rows + 1, 0))
    rows = distinct - 1
    known = rows >= 0
    h_count = np.zeros(len(rows), dtype=np.int64)
    h_head = np.zeros(len(rows), dtype=np.int64)
    h_count[known] = h_all_count[rows[known]]
    h_head[known] = h_all_head[rows[known]]
    h_cells = _ring_cells(np.where(known, rows, 0), h_head, h_count, store.hwms.capacity)
    if len(h_all_offsets):
        h_offsets, h_times = h_all_offsets[h_cells], h_all_times[h_cells]
    else:
        h_offsets = h_times = np.zeros(h_cells.shape, dtype=np.int64)
    return _histories(h_offsets, h_times, h_count), history


def unique_ints(keys: I64) -> tuple[I64, I64]:
    """`np.unique(keys, return_inverse=True)` for non-negative integers; by a table instead of a sort when they are
    dense (HWM rows, topic-partitions: a million keys over some thousands of values), three times faster."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    top = int(keys.max()) + 1
    if top > 4 * len(keys):
        distinct, inverse = np.unique(keys, return_inverse=True)
        return distinct.astype(np.int64), inverse.reshape(-1).astype(np.int64)
    seen = np.zeros(top, dtype=np.bool_)
    seen[keys] = True
    found = np.flatnonzero(seen)
    slot = np.zeros(top, dtype=np.int64)
    slot[found] = np.arange(len(found))
    return found.astype(np.int64), slot[keys]


def _histories(offsets: I64, times: I64, count: I64) -> HwmHistories:
    """With the sortedness flags (padding repeats the oldest sample: no effect on them)."""
    offsets_sorted = ~np.asarray((offsets[:, 1:] < offsets[:, :-1]).any(axis=1), dtype=np.bool_)
    times_sorted = ~np.asarray((times[:, 1:] < times[:, :-1]).any(axis=1), dtype=np.bool_)
    return HwmHistories(offsets, times, count, offsets_sorted, times_sorted)


def gather(store: OffsetStore, slots: I64, history: I64, histories: HwmHistories) -> WindowColumns:
    """The windows of `slots`, whose HWM histories are `histories[history]`, as one block: full windows in their
    rings' order, the others oldest first (see the module docstring)."""
    commits = store.commits
    n = commits.intervals
    all_offsets, all_times, all_lags, all_head, all_count = commits.buffers()
    head = all_head[slots].astype(np.int64)
    count = all_count[slots].astype(np.int64)
    if not len(slots) or int(count.max()) < n:  # no full window: un-rotate them all, trimmed to the longest
        cells = _ring_cells(slots, head, count, n)
        offsets = commits.add_bases(all_offsets.take(cells), slots)
        times, lags = all_times.take(cells), all_lags.take(cells)
        oldest = np.zeros(len(slots), dtype=np.int64)
        return _columns(offsets, times, commits.epoch_ms, lags, count, oldest, history, histories)
    # whole rings, one row copy each (a slot's cells are the row `slot` of the arrays seen as (slots, n)); times and
    # lags stay in the store's dtype
    offsets = all_offsets.reshape(-1, n).take(slots, axis=0)
    times = all_times.reshape(-1, n).take(slots, axis=0)
    lags = all_lags.reshape(-1, n).take(slots, axis=0)
    short = np.flatnonzero(count < n)
    if len(short):  # the few windows not yet full (and placeholders): oldest first and padded, as before
        cells = _ring_cells(slots[short], head[short], count[short], n, width=n)
        offsets[short], times[short], lags[short] = all_offsets[cells], all_times[cells], all_lags[cells]
    offsets = commits.add_bases(offsets, slots)  # each row's offsets are deltas from its slot's base
    oldest = head  # a full ring's next cell to write (always < n) is its oldest
    oldest[short] = 0
    return _columns(offsets, times, commits.epoch_ms, lags, count, oldest, history, histories)


def _columns(
    offsets: I64, times: Ints, epoch_ms: int, lags: Ints, count: I64, oldest: I64, history: I64, h: HwmHistories
) -> WindowColumns:
    """The block, with the newest and oldest values that the rules read per row picked out once."""
    rows, width = offsets.shape
    row_start = np.arange(0, rows * width, width)
    first = row_start + oldest
    newest = row_start + newest_column(oldest, width)
    flat_times = times.ravel()
    first_ts = np.add(flat_times.take(first), epoch_ms, dtype=np.int64)
    last_ts = np.add(flat_times.take(newest), epoch_ms, dtype=np.int64)
    return WindowColumns(
        offsets,
        times,
        epoch_ms,
        lags,
        count,
        oldest,
        offsets.ravel().take(newest),
        first_ts,
        last_ts,
        history,
        h.offsets,
        h.times_ms,
        h.count,
        h.offsets_sorted,
        h.times_sorted,
    )


def _ring_cells(rows: I64, head: I64, count: I64, n: int, width: int | None = None) -> I64:
    """Flat cell index of each row's ring, oldest first, right-aligned and edge-padded, `width` columns (default
    `max(count)`)."""
    if width is None:
        width = max(int(count.max()), 1) if len(count) else 1
    start = (head - count) % n
    cells: I64 = _ring_table(n, width)[start * (n + 1) + count]
    cells += rows[:, None] * n
    return cells


@cache
def _ring_table(n: int, width: int) -> I64:
    """Row `start * (n + 1) + count`: the cells within one ring of `n` of a window of `count` commits beginning at
    `start`, as `_ring_cells` lays them out; one gather per block instead of five passes with a modulo."""
    start, count = np.divmod(np.arange(n * (n + 1)), n + 1)
    step = np.maximum(np.arange(width)[None, :] - (width - count)[:, None], 0)
    table: I64 = (start[:, None] + step) % n
    table.flags.writeable = False  # shared by every call
    return table


def newest_column(oldest: I64, width: int) -> I64:
    """The column of each row's newest value, the one before `oldest` (by a table: a modulo costs 5x more)."""
    column: I64 = _newest_columns(width)[oldest]
    return column


@cache
def _newest_columns(width: int) -> I64:
    table: I64 = (np.arange(width) - 1) % width
    table.flags.writeable = False
    return table


def from_windows(windows: Sequence[Window], n: int, m: int) -> WindowColumns:
    """A block built from scalar windows (at most `n` commits, `m` HWM samples each); for tests and single reads."""
    rows = len(windows)
    count = np.array([len(w.offsets) for w in windows], dtype=np.int64)
    h_count = np.array([len(w.hwm_offsets) for w in windows], dtype=np.int64)
    width = max(int(count.max()) if rows else 1, 1)
    h_width = max(int(h_count.max()) if rows else 1, 1)
    blocks = [np.zeros((rows, width), dtype=np.int64) for _ in range(3)]
    h_blocks = [np.zeros((rows, h_width), dtype=np.int64) for _ in range(2)]
    for r, w in enumerate(windows):
        if len(w.offsets) > n or len(w.hwm_offsets) > m:
            raise ValueError(f"window {r}: {len(w.offsets)} commits > {n} or {len(w.hwm_offsets)} HWMs > {m}")
        for block, values in zip(blocks, (w.offsets, w.timestamps_ms, w.lags), strict=True):
            _put_padded(block[r], values)
        for block, values in zip(h_blocks, (w.hwm_offsets, w.hwm_times_ms), strict=True):
            _put_padded(block[r], values)
    histories = _histories(h_blocks[0], h_blocks[1], h_count)  # one history per window
    oldest = np.zeros(rows, dtype=np.int64)
    return _columns(blocks[0], blocks[1], 0, blocks[2], count, oldest, np.arange(rows, dtype=np.int64), histories)


def _put_padded(row: I64, values: Sequence[int]) -> None:
    if values:
        row[:] = values[0]
        row[len(row) - len(values) :] = values
