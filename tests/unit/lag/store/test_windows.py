"""The array windows: ring order, wrap-around, Burrow's min-distance merge, and run reuse."""

from __future__ import annotations

import random

import numpy as np

from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.protocol import MODES
from lag.store import arrays as flat_arrays
from lag.store.hwm_windows import HwmWindows
from lag.store.offsets import Ingest, OffsetStore
from lag.store.windows import NO_LAG, CommitWindows
from tests.support.lag_reference import evaluate_group_reference


def test_ring_keeps_the_newest_n_oldest_first() -> None:
    w = CommitWindows(intervals=3)
    slot = w.allocate(1)
    for i in range(5):
        w.push(slot, 100 * i, 1000 * i, i)
    assert w.read(slot) == ([200, 300, 400], [2000, 3000, 4000], [2, 3, 4])
    assert w.newest(slot) == (400, 4000, 4)


def test_min_distance_merge_keeps_the_bucket_start_timestamp() -> None:
    """Burrow's min-distance merge: the previous cell takes the new offset and lag but keeps its timestamp."""
    w = CommitWindows(intervals=5, min_distance_ms=1000)
    slot = w.allocate(1)
    assert not w.push(slot, 10, 10_000, 5)
    assert w.push(slot, 20, 10_400, 3)
    assert w.push(slot, 30, 10_999, 1)  # still < 1000 ms after the bucket start
    assert not w.push(slot, 40, 11_000, 0)
    assert w.read(slot) == ([30, 40], [10_000, 11_000], [1, 0])


def test_runs_are_contiguous_and_reused() -> None:
    w = CommitWindows(intervals=2)
    a = w.allocate(3)
    b = w.allocate(2)
    assert b == a + 3
    w.push(a + 1, 5, 5, 0)
    w.release(a, 3)
    assert w.allocate(3) == a
    assert w.count(a + 1) == 0


def test_hwm_ring_and_partition_growth() -> None:
    h = HwmWindows(capacity=2)
    h.add("c", "t", 0, 10, 1)
    h.add("c", "t", 2, 30, 1)
    assert h.partition_count("c", "t") == 3
    assert h.latest("c", "t", 1) is None
    h.add("c", "t", 0, 11, 2)
    h.add("c", "t", 0, 12, 3)
    assert h.history("c", "t", 0) == ([11, 12], [2, 3])


def test_store_drops_what_burrow_drops_and_counts_it() -> None:
    s = OffsetStore(intervals=3, expire_group_ms=60_000, group_deny="^console-")
    assert s.add_commit("c", "g", "t", 0, 5, 1000, now_ms=1000) is Ingest.NO_TOPIC
    s.add_hwm("c", "t", 1, 100, 1000)
    assert s.add_commit("c", "g", "t", 2, 5, 1000, now_ms=1000) is Ingest.NO_PARTITION
    assert s.add_commit("c", "g", "t", 0, 5, 1000, now_ms=1000) is Ingest.NO_HWM
    assert s.add_commit("c", "console-x", "t", 1, 5, 1000, now_ms=1000) is Ingest.FILTERED
    assert s.add_commit("c", "g", "t", 1, 5, 1000, now_ms=100_000) is Ingest.EXPIRED
    assert s.add_commit("c", "g", "t", 1, 40, 1000, now_ms=1000) is Ingest.STORED
    slots = list(s.slots("c", "g"))
    assert [(x.topic, x.partition) for x in slots] == [("t", 0), ("t", 1)]  # a placeholder for partition 0
    assert s.commits.read(slots[1].slot) == ([40], [1000], [60])
    assert s.has_group("c", "g", now_ms=2000)
    assert not s.has_group("c", "g", now_ms=70_000)  # lazily purged after expire-group
    assert s.groups("c") == []


def test_partition_growth_keeps_existing_windows() -> None:
    s = OffsetStore(intervals=3)
    s.add_hwm("c", "t", 0, 100, 0)
    s.add_commit("c", "g", "t", 0, 50, 0, now_ms=0)
    s.add_hwm("c", "t", 1, 100, 0)
    assert s.add_commit("c", "g", "t", 1, 60, 1, now_ms=1) is Ingest.STORED
    slots = {x.partition: x.slot for x in s.slots("c", "g")}
    assert s.commits.read(slots[0])[0] == [50]
    assert s.commits.read(slots[1])[0] == [60]


def test_offset_tombstones_empty_windows_and_then_the_group() -> None:
    s = OffsetStore(intervals=3)
    s.add_hwm("c", "t", 0, 100, 0)
    s.add_hwm("c", "t", 1, 100, 0)
    s.add_commit("c", "g", "t", 0, 50, 0, now_ms=0)
    s.add_commit("c", "g", "t", 1, 50, 0, now_ms=0)
    s.clear_partition("c", "g", "t", 0)
    assert s.groups("c") == ["g"]
    s.clear_partition("c", "g", "t", 1)
    assert s.groups("c") == []


def test_a_group_on_many_topics_keeps_every_window() -> None:
    """Past 8 topics a group finds its runs through a dict instead of its chain; windows, deletes, partition growth
    and listing must not notice."""
    s = OffsetStore(intervals=2)
    topics = [f"t{i:02d}" for i in range(12)]
    for topic in topics:
        s.add_hwm("c", topic, 0, 1000, 0)
    for round_ in range(2):
        for i, topic in enumerate(reversed(topics)):
            assert s.add_commit("c", "g", topic, 0, 10 * i + round_, 1000 * round_, 1000) is Ingest.STORED
    assert s.group_topics("c", "g") == topics
    assert [x.topic for x in s.slots("c", "g")] == topics
    windows = {x.topic: s.commits.read(x.slot)[0] for x in s.slots("c", "g")}
    assert windows == {topic: [10 * (11 - i), 10 * (11 - i) + 1] for i, topic in enumerate(topics)}
    assert s.delete_group_topic("c", "g", "t05")
    s.add_hwm("c", "t07", 1, 1000, 0)  # partition added: the run moves, its window comes along
    assert s.add_commit("c", "g", "t07", 1, 3, 2000, 2000) is Ingest.STORED
    assert s.add_commit("c", "g", "t05", 0, 7, 2000, 2000) is Ingest.STORED  # a new run for a dropped topic
    slots = {(x.topic, x.partition): x.slot for x in s.slots("c", "g")}
    assert s.commits.read(slots[("t07", 0)])[0] == [40, 41]
    assert s.commits.read(slots[("t07", 1)])[0] == [3]
    assert s.commits.read(slots[("t05", 0)])[0] == [7]
    assert s.consumers_of("c", "t05") == ["g"]
    s.delete_topic("c", "t03")
    assert "t03" not in s.group_topics("c", "g") and len(s.group_topics("c", "g")) == 11


DAY_MS = 86_400_000


def model_push(cells: list[tuple[int, int, int]], n: int, min_distance_ms: int, cell: tuple[int, int, int]) -> None:
    """The ring's contract on a plain list: Burrow's min-distance merge, then the newest `n` kept."""
    if cells and cell[1] - cells[-1][1] < min_distance_ms:
        cells[-1] = (cell[0], cells[-1][1], cell[2])
        return
    cells.append(cell)
    del cells[:-n]


def test_narrow_cells_keep_every_value_through_rebases_and_widening() -> None:
    """Timestamps live in int32 from an epoch and lags in int32 until a value does not fit: reads must return what
    was pushed through every rebase (time moving on by weeks), a widening (a span past int32) and a big lag."""
    rng = random.Random(15)
    n, min_distance = 4, 1000
    w = CommitWindows(intervals=n, min_distance_ms=min_distance)
    base = w.allocate(6)
    model: dict[int, list[tuple[int, int, int]]] = {base + s: [] for s in range(6)}
    t = 1_700_000_000_000
    epochs: set[int] = set()
    for step in range(600):
        if step == 400:
            assert w.buffers()[1].dtype == np.int32 and len(epochs) > 3  # rebased several times, still narrow
            t -= 400 * DAY_MS  # an old timestamp next to the new ones: wider than int32 can hold
        else:
            t += rng.choice([0, 1, 500, 999, 1000, 60_000, -3000, DAY_MS // 2, 2 * DAY_MS, 0, 1, 1000])
        lag = rng.choice([NO_LAG, 0, 5, 2**31 - 1]) if step < 500 else rng.choice([0, 2**31, 2**40])
        slot = rng.choice(list(model))
        if step == 400:  # into an empty window, so that it is stored and not merged (it goes back in time)
            slot = w.allocate(1)
            model[slot] = []
        offset = rng.randint(0, 2**40)
        newest_before = model[slot][-1][1] if model[slot] else None
        merged = w.push(slot, offset, t, lag)
        model_push(model[slot], n, min_distance, (offset, t, lag))
        assert merged == (newest_before is not None and t - newest_before < min_distance)
        epochs.add(w.epoch_ms)
        for s, cells in model.items():
            offsets, times, lags = (list(x) for x in zip(*cells, strict=True)) if cells else ([], [], [])
            assert w.read(s) == (offsets, times, lags), (step, s)
            assert w.newest(s) == (cells[-1] if cells else None)
            if cells:
                head, count = int(w.buffers()[3][s]), len(cells)
                ring = [s * n + (head - count + i) % n for i in range(count)]
                got = [a.tolist() for a in w.cells(np.array(ring, dtype=np.int64))]
                assert got == [offsets, times, lags], (step, s)
    assert w.buffers()[1].dtype == np.int64 and w.epoch_ms == 0  # widened by the 400-day span
    assert w.buffers()[2].dtype == np.int64  # widened by the lags past int32


def test_offsets_read_back_through_slot_rebases_and_widening() -> None:
    """Offsets live in int32 as deltas from their slot's base: reads must return what was pushed when offsets move
    on by more than int32 (the slot is rebased), go back (a rewind), merge, and when one window spans more than
    int32 (the offsets become int64, up to 2**63 - 1)."""
    rng = random.Random(16)
    n, min_distance = 4, 1000
    w = CommitWindows(intervals=n, min_distance_ms=min_distance)
    base = w.allocate(5)
    model: dict[int, list[tuple[int, int, int]]] = {base + s: [] for s in range(5)}
    offsets_now = {s: rng.choice([0, 2**40, 2**62]) for s in model}
    t = 1_700_000_000_000
    bases: set[int] = set()
    for step in range(700):
        slot = rng.choice(list(model))
        if step == 500:
            assert w.buffers()[0].dtype == np.int32 and len(bases) > 10  # rebased many times, still narrow
            offsets_now[slot] = 2**63 - 1  # 2**62 or more from the window's other offsets
        elif step > 500 and step % 50 == 0:
            offsets_now[slot] = rng.choice([0, -1, 2**63 - 1])
        else:
            step_by = rng.choice([0, 1, 5000, -20, 2**28, 2**29, 2**30 + 7, -(2**29)])  # a window spans < 2**32
            offsets_now[slot] = min(max(offsets_now[slot] + step_by, 0), 2**63 - 1)
        t += rng.choice([0, 500, 1000, 60_000])
        w.push(slot, offsets_now[slot], t, 7)
        model_push(model[slot], n, min_distance, (offsets_now[slot], t, 7))
        bases.add(int(w._arrays[5][slot]))
        for s, cells in model.items():
            offsets = [c[0] for c in cells]
            assert w.read(s)[0] == offsets, (step, s)
            assert (w.newest(s) or (None,))[0] == (offsets[-1] if offsets else None)
            if cells:
                head, count = int(w.buffers()[3][s]), len(cells)
                ring = [s * n + (head - count + i) % n for i in range(count)]
                assert w.cells(np.array(ring, dtype=np.int64))[0].tolist() == offsets, (step, s)
                assert w.cells(np.array([ring], dtype=np.int64))[0].tolist() == [offsets], (step, s)
                deltas = w.buffers()[0][np.array([ring], dtype=np.int64)]
                assert w.add_bases(deltas, np.array([s], dtype=np.int64)).tolist() == [offsets], (step, s)
    assert w.buffers()[0].dtype == np.int64  # widened by the span past int32


def test_a_widened_store_evaluates_as_the_reference() -> None:
    """The columnar path reads the widened columns as the scalar one does."""
    s = OffsetStore(intervals=3, expire_group_ms=10_000 * DAY_MS)
    now = 1_700_000_000_000
    s.add_hwm("c", "t", 0, 2**40, now)
    s.add_hwm("c", "t", 1, 2**40, now)
    for i, ts in enumerate((now - 60 * DAY_MS, now - 1000, now)):
        s.add_commit("c", "a", "t", 0, 100 + i, ts, now)  # lag past int32
        s.add_commit("c", "b", "t", 1, 2**40 - 5 + i, ts, now)
    assert [a.dtype for a in s.commits.buffers()[:3]] == [np.int32, np.int64, np.int64]  # offsets from a base
    for i, offset in enumerate((2**40 - 3, 2**40 - 2**34, 2**40 - 1)):
        s.add_commit("c", "d", "t", 1, offset, now - 1000 + i, now)  # a window wider than int32
    assert s.commits.buffers()[0].dtype == np.int64
    for mode in MODES:
        evaluator = Evaluator(
            s, RuleParams(mode=mode, intervals=3, allowed_lag=0, minimum_complete=0.0, offset_refresh_ms=1000)
        )
        for status in evaluator.evaluate_cluster("c", now + 500):
            assert status == evaluate_group_reference(evaluator, "c", status.group, now + 500)


def test_arrays_start_zeroed_and_grow_with_the_values_in_use() -> None:
    a = flat_arrays.allocate_zeroed(1 << 20, np.int32)
    assert a.flags.writeable and not a.any()
    a[[0, 5, (1 << 20) - 1]] = (7, -1, 3)
    b = flat_arrays.grow_zeroed(a, 1 << 21, used=6)
    assert b[:6].tolist() == [7, 0, 0, 0, 0, -1] and not b[6:].any()


def test_fitting_epoch_leaves_room_ahead_or_says_it_cannot() -> None:
    assert flat_arrays.fitting_epoch(1000, 2000) == 2000 - 2**30
    low, high = 0, 2**32 - 1
    epoch = flat_arrays.fitting_epoch(low, high)
    assert epoch is not None and low - epoch == flat_arrays.I32_MIN and high - epoch == flat_arrays.I32_MAX
    assert flat_arrays.fitting_epoch(0, 2**32) is None


def test_freed_heap_is_released_where_glibc_can() -> None:
    """The store's growth hands freed heap pages back through glibc's malloc_trim (docs/benchmarks.md); on Linux
    with glibc, where the service runs and CI tests, the call must be found."""
    freed = [bytearray(1 << 16) for _ in range(64)]
    del freed[::2]
    assert flat_arrays.release_freed_heap()


def test_last_commit_times_read_back_through_rebases_and_widening() -> None:
    """A group's last commit time lives in int32 ms from an epoch: it must read back exactly (and expire the group
    exactly expire-group later) while time moves on by weeks (rebases), and after a span past int32 (widening)."""
    rng = random.Random(17)
    s = OffsetStore(intervals=2, expire_group_ms=10_000 * DAY_MS)
    s.add_hwm("c", "t", 0, 1000, 0)
    last: dict[str, int] = {}
    epochs: set[int] = set()
    t = 1_700_000_000_000
    for step in range(300):
        if step == 200:
            assert s.runs.last_commit.typecode == "i" and len(epochs) > 3  # rebased several times, still narrow
            t -= 100 * DAY_MS  # a commit 100 days before the others: wider than int32 can hold
        else:
            t += rng.choice([0, 1, 1000, DAY_MS, 5 * DAY_MS])
        group = f"g{step % 8}"  # every group commits within 8 steps (40 days at most): the times fit int32
        assert s.add_commit("c", group, "t", 0, step, t, t) in (Ingest.STORED, Ingest.MERGED)  # merged: went back
        last[group] = t
        epochs.add(s.runs.last_epoch_ms)
        assert {g: s.last_commit_ms("c", g) for g in last} == last, step
    assert s.runs.last_commit.typecode == "q"
    group, ts = min(last.items(), key=lambda item: item[1])
    assert s.has_group("c", group, ts + 10_000 * DAY_MS)
    assert not s.has_group("c", group, ts + 10_000 * DAY_MS + 1)


def test_runs_past_uint16_topic_ids_and_partitions() -> None:
    """Run topic ids and partition counts are uint16 until one is larger; the group keeps its windows."""
    s = OffsetStore(intervals=1)
    s.add_hwm("c", "wide", 69_999, 10, 0)
    assert s.add_commit("c", "g", "wide", 69_999, 4, 0, 0) is Ingest.STORED
    for i in range(65_536):
        s.add_hwm("c", f"t{i}", 0, 10, 0)
    assert s.add_commit("c", "g", "t65535", 0, 5, 0, 0) is Ingest.STORED
    assert [buf.typecode for buf in s.run_buffers()] == ["i", "i", "i", "i"]
    slots = {(x.topic, x.partition): x.slot for x in s.slots("c", "g")}
    assert len(slots) == 70_001
    assert s.commits.read(slots[("wide", 69_999)])[0] == [4] and s.commits.read(slots[("t65535", 0)])[0] == [5]
    assert s.group_topics("c", "g") == ["t65535", "wide"]
