"""The columnar rules against the scalar reference: every window, every mode, the same rule, status, current lag,
completeness and reason (vectorised evaluation must not change a verdict).

Two levels: blocks built straight from windows (`from_windows`), which reach shapes the store never produces
(unknown lags, missing or out-of-order HWMs, int64-overflowing interpolation); and random streams through a real
`OffsetStore`, which exercise the ring order (wrap-around), min-distance merges, placeholders, partition growth,
deletes, owners and the group roll-up.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from lag.evaluate.columnar.block import WindowColumns, from_windows
from lag.evaluate.columnar.rules import UNDECIDED, decide
from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RULE_SETS, RULE_STATUS, Rule, RuleParams, Window, explain
from lag.protocol import MODES, GroupStatus, Mode, Status
from lag.service import rule_params
from lag.store.offsets import OffsetStore
from lag.store.windows import NO_LAG
from pulse.config import LagConfig
from tests.support.lag_reference import evaluate_group_reference

N, M = 6, 8
"""Commit window and HWM history sizes of the window-level blocks."""


def reference(w: Window, now_ms: int, p: RuleParams) -> Rule:
    """What `Evaluator.evaluate_partition` decides for a window (placeholder, minimum-complete, then the rules)."""
    if not w.offsets:
        return Rule.NO_COMMIT
    complete = 1.0 if len(w.offsets) >= p.intervals else len(w.offsets) / p.intervals
    if complete < p.minimum_complete:
        return Rule.MINIMUM_COMPLETE
    return RULE_SETS[p.mode](w, now_ms, p)


def window(offsets: list[int], times: list[int], lags: list[int], hwms: list[int], hwm_times: list[int]) -> Window:
    current = max(0, hwms[-1] - offsets[-1]) if hwms and offsets else 0
    return Window(offsets, times, lags, hwms, hwm_times, current)


def random_window(rng: random.Random, scale: int = 1) -> Window:
    """Offsets that advance, stall, rewind and recover; ties in time; unknown and zero lags; HWM histories that are
    missing, short, flat, out of order or behind the commits."""
    count = rng.choice([0, 1, 1, 2, 3, N, N, N])
    offset, t = rng.randint(0, 50) * scale, 1_000_000 + rng.randint(0, 5000)
    offsets, times, lags = [], [], []
    for _ in range(count):
        offset = max(0, offset + rng.choice([0, 0, 1, 5, 20, -3, -40]) * scale)
        t += rng.choice([0, 0, 1, 1000, 2000, 30_000, -500])
        offsets.append(offset)
        times.append(t)
        lags.append(rng.choice([NO_LAG, 0, 0, 1, 2, 3, 10, 50, 100]) * (scale if rng.random() < 0.5 else 1))
    hwm, ht = (offsets[0] if offsets else 0) + rng.randint(-5, 60) * scale, 1_000_000 + rng.randint(-3000, 8000)
    hwms, hwm_times = [], []
    for _ in range(rng.choice([0, 1, 2, 3, M, M])):
        hwm = max(0, hwm + rng.choice([0, 0, 0, 1, 2, 30, 200, -10]) * scale)
        ht += rng.choice([0, 10, 1000, 5000, 30_000, -2000])
        hwms.append(hwm)
        hwm_times.append(ht)
    return window(offsets, times, lags, hwms, hwm_times)


ADVERSARIAL = [
    window([], [], [], [], []),  # placeholder
    window([], [], [], [10], [5]),
    window([7], [1000], [3], [], []),  # one commit, no HWM at all
    window([7], [1000], [0], [7], [1000]),  # zero lag
    window([7, 7, 7], [1000, 1000, 1000], [5, 5, 5], [12, 12], [1000, 1000]),  # ties everywhere
    window([5, 9, 4, 9, 12], [0, 1, 2, 3, 4], [1, 1, 1, 1, 1], [13], [4]),  # rewind recovered exactly
    window([5, 9, 4, 8, 8], [0, 1, 2, 3, 4], [1, 1, 1, 1, 1], [13], [4]),  # rewind not recovered
    window([5, 9, 4, 8, 8], [0, 1, 2, 3, 4], [0, 1, 1, 1, 1], [13], [4]),  # rewind behind a zero lag (1.2.1)
    window([10, 20, 30], [0, 100, 200], [NO_LAG, NO_LAG, NO_LAG], [40, 40, 40], [150, 200, 250]),  # unknown lags
    window([10, 20, 30], [0, 100, 200], [5, NO_LAG, 3], [40], [250]),  # unknown between decreasing lags
    window([10, 20, 30], [0, 100, 200], [5, NO_LAG, 9], [40], [250]),
    window([10, 20, 31], [0, 100, 200], [1, 1, 1], [32, 32, 32], [0, 100, 300]),  # a marker, nothing produced
    window([10, 20, 31], [0, 100, 200], [1, 1, 1], [31, 32, 32], [100, 200, 300]),  # produced after the commit
    window([10, 20, 30], [0, 100, 200], [9, 9, 9], [50, 40, 60, 35], [300, 100, 200, 50]),  # HWM times shuffled
    window([10, 20, 30], [0, 100, 200], [9, 9, 9], [50, 20, 10], [0, 100, 200]),  # HWM going down
    # sample times out of order: the newest bracketing pair is (100, 400), bisection would pick (0, 300)
    window([20, 20], [200, 250], [5, 5], [0, 30, 1000, 1030], [0, 300, 100, 400]),
    # HWM back at the commit after going past it: bisection would find the old sample, the scan the newest one
    window([50], [0], [9], [5, 100, 100, 100, 100, 5, 100, 100], list(range(0, 80_000, 10_000))),
    window([10, 20, 30], [150, 100, 50], [9, 9, 9], [40, 45], [0, 500]),  # commit times going back
    # interpolation products beyond int64: offsets near 2**61, HWM samples 2**30 ms apart
    window([2**61, 2**61 + 5], [2**30, 2**31], [9, 9], [2**60, 2**62], [0, 2**32]),
    window([2**60, 2**60], [2**29, 2**31 + 7], [9, 9], [2**59, 2**62, 2**62 + 3], [0, 2**30, 2**32]),
    # just past int64: 2**33 records x 1.5 * 2**30 ms = 1.5 * 2**63
    window([5, 6], [2**30 + 2**29, 2**30 + 2**29 + 1], [9, 9], [0, 2**33], [0, 2**31]),
]

PARAMS = [
    RuleParams(mode=mode, intervals=intervals, allowed_lag=allowed, minimum_complete=minimum, offset_refresh_ms=1000)
    for mode in MODES
    for intervals, allowed, minimum in ((N, 0, 0.0), (3, 1, 0.0), (N, 5, 0.5), (4, 0, 1.0))
]


def turned(block: WindowColumns, shift: int) -> WindowColumns:
    """The block with each row's ring turned so that its oldest commit sits in column `shift + row` (mod width), as
    `gather` lays out a full ring whose head is there; a padded row turns the same way (its padding stays before
    its oldest commit)."""
    width = block.offsets.shape[1]
    oldest = (shift + np.arange(len(block))) % width
    take = (np.arange(width)[None, :] - oldest[:, None]) % width
    return dataclasses.replace(
        block,
        offsets=np.take_along_axis(block.offsets, take, axis=1),
        stored_times=np.take_along_axis(block.stored_times, take, axis=1),
        lags=np.take_along_axis(block.lags, take, axis=1),
        oldest=oldest,
    )


def assert_block_matches_reference(windows: list[Window], now_ms: int, p: RuleParams) -> None:
    """Oldest first, and turned by every shift: the ring order must not change a verdict."""
    block = from_windows(windows, N, M)
    for shift in range(block.offsets.shape[1]):
        assert_decided_as_reference(turned(block, shift), windows, now_ms, p)


def assert_decided_as_reference(block: WindowColumns, windows: list[Window], now_ms: int, p: RuleParams) -> None:
    decided = decide(block, now_ms, p)
    assert not (decided.rules == UNDECIDED).any()
    for row, w in enumerate(windows):
        want = reference(w, now_ms, p)
        got = Rule(int(decided.rules[row]))
        context = f"row {row} oldest at {block.oldest[row]} {w} now {now_ms} {p}"
        assert got is want, context
        assert RULE_STATUS[got] is RULE_STATUS[want]
        assert int(decided.current_lag[row]) == w.current_lag, context
        complete = (1.0 if len(w.offsets) >= p.intervals else len(w.offsets) / p.intervals) if w.offsets else 0.0
        assert float(decided.complete[row]) == complete, context
        if w.offsets:
            assert explain(got, w, now_ms, p) == explain(want, w, now_ms, p)


@pytest.mark.parametrize("p", PARAMS, ids=lambda p: f"{p.mode}-i{p.intervals}-a{p.allowed_lag}-m{p.minimum_complete}")
def test_random_windows_match_the_scalar_rules(p: RuleParams) -> None:
    rng = random.Random(f"columns-{p}")
    for trial in range(30):
        windows = [random_window(rng, scale=2**40 if trial % 10 == 9 else 1) for _ in range(60)]
        now_ms = 1_000_000 + rng.choice([0, 999, 1000, 5000, 40_000, 200_000, 10**7])
        assert_block_matches_reference(windows, now_ms, p)


@pytest.mark.parametrize("p", PARAMS, ids=lambda p: f"{p.mode}-i{p.intervals}-a{p.allowed_lag}-m{p.minimum_complete}")
def test_adversarial_windows_match_the_scalar_rules(p: RuleParams) -> None:
    for now_ms in (0, 300, 1000, 1999, 64_000, 2**31 + 100_000, 2**33):
        assert_block_matches_reference(ADVERSARIAL, now_ms, p)
        for w in ADVERSARIAL:  # alone, so that no other row sets the block's width
            assert_block_matches_reference([w], now_ms, p)


def test_the_overflow_rows_take_the_exact_path() -> None:
    """The adversarial interpolation rows overflow int64 if multiplied naively; the result is still exact."""
    p = RuleParams(mode="enhanced", intervals=N, allowed_lag=0, minimum_complete=0.0, offset_refresh_ms=1)
    for w in ADVERSARIAL[-3:]:
        assert (w.hwm_offsets[1] - w.hwm_offsets[0]) * (w.timestamps_ms[0] - w.hwm_times_ms[0]) > 2**63
        assert_block_matches_reference([w], 2**31, p)


# -- through the store ---------------------------------------------------------------------------------------------


def gid_of(store: OffsetStore, group: str) -> int:
    gid = store.group_id("c", group)
    assert gid is not None, group
    return gid


def random_store(rng: random.Random, mode: Mode) -> tuple[OffsetStore, RuleParams, list[int]]:
    """A store fed a random stream; returns it, the params and the evaluation times to try."""
    intervals = rng.randint(1, 5)
    store = OffsetStore(
        intervals=intervals,
        min_distance_ms=rng.choice([0, 0, 700]),
        hwm_capacity=rng.choice([None, intervals + 2]),
    )
    p = RuleParams(
        mode=mode,
        intervals=intervals,
        allowed_lag=rng.choice([0, 0, 2]),
        minimum_complete=rng.choice([0.0, 0.0, 0.6]),
        offset_refresh_ms=rng.choice([300, 2000]),
    )
    topics = {f"t{i}": rng.randint(1, 3) for i in range(3)}
    hwm = {(t, q): rng.randint(0, 30) for t, n in topics.items() for q in range(n + 1)}
    committed: dict[tuple[str, str, int], int] = {}
    t, times = 1_000_000, []
    for _ in range(rng.randint(30, 150)):  # up to 150 events over <= 5-cell windows: rings wrap
        t += rng.choice([0, 1, 500, 1000, 5000, -300])
        r = rng.random()
        topic, q = rng.choice(list(hwm))
        group = f"g{rng.randint(0, 4)}"
        if r < 0.35 and (q < topics[topic] or rng.random() < 0.2):  # sometimes a partition is added
            hwm[(topic, q)] += rng.choice([0, 0, 1, 4, 50])
            store.add_hwm("c", topic, q, hwm[(topic, q)], t)
        elif r < 0.85:
            key = (group, topic, q)
            offset = committed.get(key, rng.randint(0, 20)) + rng.choice([0, 0, 1, 3, -4, -25, 40])
            committed[key] = max(0, min(offset, hwm[(topic, q)] + 2))
            store.add_commit("c", group, topic, q, committed[key], t, t)
        elif r < 0.9:
            store.set_owner("c", group, topic, q, f"/10.0.0.{q}", f"client-{group}")
        elif r < 0.93:
            store.clear_partition("c", group, topic, q)
        elif r < 0.95:
            store.delete_group_topic("c", group, topic)
        else:
            times.append(t + rng.choice([0, 1, 999, 4000, 60_000]))
    return store, p, [*times, t, t + 1500, t + 100_000]


def test_store_streams_match_the_reference_evaluator() -> None:
    rng = random.Random(1105)
    evaluations = 0
    for trial in range(90):
        mode = MODES[trial % 3]
        store, p, times = random_store(rng, mode)
        evaluator = Evaluator(store, p)
        for now_ms in times:
            fast = list(evaluator.evaluate_cluster("c", now_ms))
            assert [s.group for s in fast] == store.groups("c")
            for status in fast:
                assert status == evaluate_group_reference(evaluator, "c", status.group, now_ms), (trial, now_ms)
                evaluations += 1
            if fast:  # and one group through the single-group entry point
                assert fast[0] == evaluator.evaluate_group("c", fast[0].group, now_ms)
    assert evaluations > 1000, evaluations


def test_group_roll_up_arrays_agree_with_the_objects() -> None:
    """`GroupVerdicts`' per-group arrays (what a bulk reader uses) say what the `GroupStatus` objects say."""
    rng = random.Random(570)
    for trial in range(60):
        store, p, times = random_store(rng, MODES[trial % 3])
        evaluator = Evaluator(store, p)
        names, ids = store.sorted_groups("c")
        verdicts = evaluator.evaluate_groups("c", ids, times[-2])
        for g, name in enumerate(names):
            status: GroupStatus = evaluator.group_status(verdicts, g)
            assert status == evaluate_group_reference(evaluator, "c", name, times[-2])
            assert Status(int(verdicts.group_status[g])) is status.status
            assert int(verdicts.group_totallag[g]) == status.totallag
            assert float(verdicts.group_complete[g]) == status.complete
            lo, hi = verdicts.index.starts[g], verdicts.index.starts[g + 1]
            assert [Status(int(s)) for s in verdicts.status[lo:hi]] == [v.status for v in status.partitions]
            committed = [(i, v.end.offset) for i, v in enumerate(status.partitions) if v.end is not None]
            assert [(i, int(verdicts.last_offset[lo + i])) for i, _ in committed] == committed
            maxlag = int(verdicts.group_maxlag[g])
            assert (status.maxlag is None) == (maxlag < 0)
            if status.maxlag is not None:
                assert status.partitions[maxlag - lo] is status.maxlag
            if status.status > Status.OK:
                worst = status.partitions[int(verdicts.group_worst[g]) - lo]
                assert status.reason.startswith(f"{worst.topic}[{worst.partition}] {worst.status.name}:")


RING_PATTERNS: dict[str, tuple[list[int], list[int]]] = {
    # name: (offsets, HWMs) oldest first; a window of 4 keeps the newest 4 of the first k
    "advancing, lag growing": ([100 * (i + 1) for i in range(8)], [1000 + 150 * i for i in range(8)]),
    "advancing, lag shrinking": ([100 * (i + 1) for i in range(8)], [10_000] * 8),
    "stalled": ([100] * 8, [1000] * 8),
    "caught up": ([100 * (i + 1) for i in range(8)], [100 * (i + 1) for i in range(8)]),
    "rewind early": ([500, 100, 200, 300, 400, 450, 460, 470], [1000] * 8),
    "rewind late": ([100, 200, 300, 400, 500, 600, 700, 300], [1000] * 8),
    "rewind in the middle": ([100, 200, 300, 400, 150, 350, 360, 370], [1000] * 8),
    "rewind recovered": ([100, 200, 300, 400, 150, 400, 410, 420], [1000] * 8),
}
DAY_MS = 86_400_000


@pytest.mark.parametrize("columns", ["int32", "rebased", "int64"])
def test_full_rings_are_judged_in_their_own_order(columns: str) -> None:
    """`gather` copies a full window as its ring holds it (oldest at the head) and lays the short ones out oldest
    first in the same block: every head position, rewinds on either side of the ring's end, with int32 columns, after
    a rebase (commits days apart) and once widened to int64, decide as the reference does."""
    n, end = 4, 1_700_000_000_000
    step = {"int32": 60_000, "rebased": 5 * DAY_MS, "int64": 60_000}[columns]
    store = OffsetStore(intervals=n, expire_group_ms=1000 * DAY_MS)
    if columns == "int64":  # a 60-day-old commit and a lag past int32: both columns widened
        store.add_hwm("c", "big", 0, 2**40, end - 60 * DAY_MS)
        store.add_commit("c", "big", "big", 0, 5, end - 60 * DAY_MS, end - 60 * DAY_MS)
    epochs: set[int] = set()
    if columns == "rebased":  # the epoch is set 35 days before `end`: later commits move it
        store.add_hwm("c", "first", 0, 10, end - 7 * step)
        store.add_commit("c", "first", "first", 0, 5, end - 7 * step, end - 7 * step)
        epochs.add(store.commits.epoch_ms)
    for name, (offsets, hwms) in RING_PATTERNS.items():
        for k in range(1, 9):  # k commits: short windows (k < 4), then full rings with head k % 4
            topic = f"{name} {k}"
            for i in range(k):
                ts = end - (k - 1 - i) * step  # every group's newest commit at `end`
                store.add_hwm("c", topic, 0, hwms[i], ts)
                store.add_commit("c", topic, topic, 0, offsets[i], ts, ts)
                epochs.add(store.commits.epoch_ms)
    _, times, lags, head, count = store.commits.buffers()
    assert ((count == n) & (head != 0)).any() and ((count > 0) & (count < n)).any()
    want_dtypes = [np.int64, np.int64] if columns == "int64" else [np.int32, np.int32]
    assert [times.dtype, lags.dtype] == want_dtypes
    assert (len(epochs) > 1) is (columns == "rebased")
    for mode in MODES:
        p = RuleParams(mode=mode, intervals=n, allowed_lag=0, minimum_complete=0.0, offset_refresh_ms=1000)
        evaluator = Evaluator(store, p)
        seen = set()
        for status in evaluator.evaluate_cluster("c", end + 1000):
            assert status == evaluate_group_reference(evaluator, "c", status.group, end + 1000), (mode, status.group)
            seen |= {v.status for v in status.partitions}
        assert {Status.OK, Status.WARN, Status.STALL, Status.REWIND} <= seen, (mode, seen)


def test_fresh_lags_interpolate_between_samples_with_the_times_kept_narrow() -> None:
    """Enhanced E5: a commit made between two HWM samples and read after the second has a stored lag of 500 but a
    fresh lag of 0 (the HWM interpolated at its time, Burrow #101); the commit times are kept less the store's
    epoch, so the samples' times must be compared in the same terms to find the cells between two samples."""
    store = OffsetStore(intervals=4, hwm_capacity=8, expire_group_ms=DAY_MS)
    end = 1_700_000_000_000
    store.add_hwm("c", "t", 0, 1000, end - 240_000)
    for i in range(4):
        sample_ms = end - (3 - i) * 60_000
        store.add_hwm("c", "t", 0, 1000 * (i + 2), sample_ms)
        store.add_commit("c", "g", "t", 0, 1000 * (i + 1) + 500, sample_ms - 30_000, sample_ms)
    assert store.commits.epoch_ms != 0 and store.commits.read(0)[2] == [500] * 4
    # and a commit after the newest sample: the newest HWM from its time on (fresh lags 300, 300, 200: decreasing),
    # not the last two samples' slope carried past it (700: WARN)
    for i, hwm in enumerate((1000, 2000, 3000)):
        store.add_hwm("c", "u", 0, hwm, end - 120_000 + 60_000 * i)
    for offset, commit_ms in ((1200, end - 90_000), (2200, end - 30_000), (2800, end + 30_000)):
        store.add_commit("c", "h", "u", 0, offset, commit_ms, end)
    p = RuleParams(mode="enhanced", intervals=4, allowed_lag=0, minimum_complete=0.0, offset_refresh_ms=1000)
    evaluator = Evaluator(store, p)
    now_ms = end + 31_000
    for status in evaluator.evaluate_cluster("c", now_ms):
        assert status == evaluate_group_reference(evaluator, "c", status.group, now_ms)
    verdicts = evaluator.evaluate_groups("c", [gid_of(store, g) for g in ("g", "h")], now_ms)
    assert [Rule(int(r)) for r in verdicts.rules] == [Rule.E5_REACHED, Rule.E5_DECREASED]  # stored lags: WARN


def test_rule_values_index_the_status_tables() -> None:
    """The columnar path looks rules up by value (`evaluator._RULES`, `_STATUS_OF_RULE`): values are 0..n-1."""
    assert [rule.value for rule in Rule] == list(range(len(Rule)))
    assert len(Rule) <= UNDECIDED


def test_empty_groups_and_clusters() -> None:
    store = OffsetStore(intervals=3)
    evaluator = Evaluator(store, rule_params(LagConfig(intervals=3)))
    assert list(evaluator.evaluate_cluster("nowhere", 0)) == []
    verdicts = evaluator.evaluate_groups("nowhere", [], 0)
    assert len(verdicts.group_status) == 0 and len(verdicts.rules) == 0
    store.add_hwm("c", "t", 0, 10, 0)
    store.add_commit("c", "g", "t", 0, 5, 0, 0)
    store.delete_group_topic("c", "g", "t")  # the group stays, with no partitions (as before)
    [status] = evaluator.evaluate_cluster("c", 1000)
    assert status == evaluate_group_reference(evaluator, "c", "g", 1000)
    assert (status.status, status.partition_count, status.maxlag) == (Status.OK, 0, None)
    assert np.array_equal(evaluator.evaluate_groups("c", [gid_of(store, "g")], 1000).group_maxlag, [-1])
