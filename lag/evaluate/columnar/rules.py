"""The rules of `rules.py` applied to a block of group-partitions at once with numpy (pure, like `rules.py`).

`decide` returns, per row, the `Rule` that fired, the current lag and the window's completeness; `rules.explain`
turns a rule into its reason text when a caller reads the verdict. Each step below names the scalar predicate it
reproduces; `tests/unit/lag/evaluate/test_columnar_rules.py` holds the two paths to identical answers on random and
adversarial windows. Rows settle in rule order: a row decided by an earlier rule is never looked at again, and the
costlier steps (HWM interpolation, the STOP scan of the HWM history) run on the rows still open only. Those two
search a HWM history; when it never goes down (HWMs and sample times only grow, so nearly always) they bisect it,
O(log m) per look-up, and otherwise compare every pair of samples, as the scalar loops do.

Integer arithmetic is int64 where the scalar rules use Python ints; the one product that could overflow (the HWM
interpolation of the fresh lags) is checked and recomputed exactly in Python for the rows where it might.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from lag.evaluate.columnar.block import I64, Ints, WindowColumns, newest_column
from lag.evaluate.rules import Rule, RuleParams
from lag.evaluate.timelag import hwm_at
from lag.store.windows import NO_LAG

Bools = NDArray[np.bool_]
UNDECIDED = 255
_OVERFLOW_GUARD = float(2**62)
_Int = TypeVar("_Int", bound=np.signedinteger[Any])
_FOLD_COLUMNS = 64
"""`_row_any` ORs up to this many columns one by one; wider masks use numpy's row reduction."""


@dataclass(frozen=True, slots=True)
class Decisions:
    """Per row of a block: the rule that fired, the current lag and the completeness."""

    rules: NDArray[np.uint8]
    current_lag: I64
    """max(0, newest HWM - newest commit); 0 without HWM or without commit."""
    complete: NDArray[np.float64]
    """1.0 for a full window, else commits / intervals."""
    last_offset: I64
    """The newest commit's offset (any value for a placeholder)."""


class _Settler:
    """Assigns rules to rows in order; `open` marks the rows no rule has taken yet."""

    def __init__(self, rows: int) -> None:
        self.rules = np.full(rows, UNDECIDED, dtype=np.uint8)
        self.open: Bools = np.ones(rows, dtype=np.bool_)

    def settle(self, rule: Rule, where: Bools) -> None:
        taken = self.open & where
        self.rules[taken] = rule
        self.open &= ~taken

    def settle_rows(self, rule: Rule, rows: I64, where: Bools) -> None:
        """As `settle`, for a predicate computed on `rows` only (which must all be open)."""
        taken = rows[where]
        self.rules[taken] = rule
        self.open[taken] = False


def decide(c: WindowColumns, now_ms: int, p: RuleParams) -> Decisions:
    """The rule, current lag and completeness of every row, in mode `p.mode`."""
    count = c.count
    last_offset = c.last_offset
    has_hwm = c.hwm_count[c.hwm_row] > 0
    newest_hwm = c.hwm_offsets[c.hwm_row, -1]
    current_lag = np.where(has_hwm & (count > 0), np.maximum(newest_hwm - last_offset, 0), 0)
    complete = np.where(count >= p.intervals, 1.0, count / p.intervals)
    s = _Settler(len(count))
    s.settle(Rule.NO_COMMIT, count == 0)
    s.settle(Rule.MINIMUM_COMPLETE, complete < p.minimum_complete)
    if p.mode == "burrow":
        _burrow(c, s, now_ms - now_ms % 1000, current_lag, p)
    elif p.mode == "burrow-1.2":
        _burrow12(c, s, now_ms - now_ms % 1000, current_lag, p)
    else:
        _enhanced(c, s, now_ms, current_lag, p)
    return Decisions(s.rules, current_lag, complete, last_offset)


def _burrow(c: WindowColumns, s: _Settler, now_ms: int, current_lag: I64, p: RuleParams) -> None:
    s.settle(Rule.CAUGHT_UP, current_lag <= p.allowed_lag)
    _settle_stop(c, s, now_ms, p.intervals)
    _settle_rewind(c, s, Rule.REWIND_UNRECOVERED)
    rows = np.flatnonzero(s.open)  # the rest only on the rows still open (caught-up groups are most of a fleet)
    offsets, lags = c.offsets[rows], c.lags[rows]
    lag_never_zero = _is_lag_always_not_zero(lags, p.allowed_lag)
    stalled = lag_never_zero & _is_stalled(offsets)
    s.settle_rows(Rule.STALL, rows, stalled)
    s.settle_rows(Rule.WARN, rows, lag_never_zero & ~stalled & _is_lag_not_decreasing(lags, c.oldest[rows]))
    s.settle(Rule.LAG_DECREASED, s.open & _scatter(lag_never_zero, rows, len(s.open)))
    s.settle(Rule.LAG_ZERO, s.open)


def _settle_stop(c: WindowColumns, s: _Settler, now_ms: int, intervals: int) -> None:
    """STOP for the open rows that stopped committing and whose group had not caught up (the HWM history is read for
    the stopped rows only: few)."""
    rows = np.flatnonzero(s.open & _is_stopped(c, now_ms))
    s.settle_rows(Rule.STOP, rows, ~_is_recent_lag_zero(c, intervals, rows))


def _settle_rewind(c: WindowColumns, s: _Settler, rule: Rule) -> None:
    """Burrow HEAD's unrecovered REWIND for the open rows (the rows with a rewind, few, are put in order to find
    it)."""
    rows = np.flatnonzero(s.open & _has_rewind(c.offsets, c.oldest))
    s.settle_rows(rule, rows, ~_is_rewind_recovered(_in_order(c.offsets[rows], c.oldest[rows])))


def _scatter(values: Bools, rows: I64, size: int) -> Bools:
    """A predicate computed on `rows`, as a mask over all `size` rows (False elsewhere)."""
    out = np.zeros(size, dtype=np.bool_)
    out[rows] = values
    return out


def _burrow12(c: WindowColumns, s: _Settler, now_ms: int, current_lag: I64, p: RuleParams) -> None:
    s.settle(Rule.CAUGHT_UP_ZERO, current_lag <= 0)
    _settle_stop(c, s, now_ms, p.intervals)
    lag_never_zero = _is_lag_always_not_zero(c.lags, 0)
    s.settle(Rule.REWIND_ANY, lag_never_zero & _has_rewind(c.offsets, c.oldest))
    s.settle(Rule.STALL, lag_never_zero & _is_stalled(c.offsets))
    # 1.2.1's WARN compares raw lags, unknown (-1) ones included
    s.settle(Rule.WARN, lag_never_zero & ~_steps_down(c.lags, c.oldest))
    s.settle(Rule.LAG_DECREASED, lag_never_zero)
    s.settle(Rule.LAG_ZERO, s.open)


def _enhanced(c: WindowColumns, s: _Settler, now_ms: int, current_lag: I64, p: RuleParams) -> None:
    last_ts = c.last_ts_ms
    s.settle(Rule.E1_CAUGHT_UP, current_lag <= p.allowed_lag)
    rows = np.flatnonzero(s.open & (current_lag <= p.allowed_lag + p.marker_allowance))
    s.settle_rows(Rule.E1_MARKER, rows, _nothing_produced_since(c, rows, last_ts[rows]))
    # E2: records waited longer than max(window span, warm-up)
    rows = np.flatnonzero(s.open)
    span = last_ts[rows] - c.first_ts_ms[rows]
    threshold = np.maximum(span, p.intervals * p.offset_refresh_ms)
    waited = now_ms - np.maximum(last_ts[rows], _waiting_since(c, rows, last_ts[rows]))
    s.settle_rows(Rule.E2_STOP, rows, waited > threshold)
    _settle_rewind(c, s, Rule.E3_REWIND)
    s.settle(Rule.E4_WARM_UP, c.count < 2)
    rows = np.flatnonzero(s.open)
    lags = _fresh_lags(c, rows)
    lag_never_zero = _is_lag_always_not_zero(lags, p.allowed_lag)
    s.settle_rows(Rule.E5_STALL, rows, lag_never_zero & _is_stalled(c.offsets[rows]))
    s.settle_rows(Rule.E5_WARN, rows, lag_never_zero & _is_lag_not_decreasing(lags, c.oldest[rows]) & s.open[rows])
    s.settle_rows(Rule.E5_DECREASED, rows, lag_never_zero & s.open[rows])
    s.settle(Rule.E5_REACHED, s.open)


# -- the predicates of rules.py, over rows -----------------------------------------------------------------------


def _is_stopped(c: WindowColumns, now_ms: int) -> Bools:
    """rules.is_stopped: silence since the last commit > span of the window's commit timestamps."""
    last = c.last_ts_ms
    stopped: Bools = (now_ms - last) > (last - c.first_ts_ms)
    return stopped


def _is_recent_lag_zero(c: WindowColumns, intervals: int, rows: I64) -> Bools:
    """rules.is_recent_lag_zero over the newest `intervals` HWM samples (padding repeats a sample already in), for
    `rows`."""
    width = min(intervals, c.hwm_offsets.shape[1])
    history = c.hwm_row[rows]
    lowest = c.hwm_offsets[history, -width:].min(axis=1)
    caught_up: Bools = (c.hwm_count[history] > 0) & (lowest <= c.last_offset[rows])
    return caught_up


def _has_rewind(offsets: I64, oldest: I64) -> Bools:
    """rules.rewind_index(...) > 0: some commit is lower than its predecessor."""
    return _steps_down(offsets, oldest)


def _is_rewind_recovered(offsets: I64) -> Bools:
    """rules.is_rewind_recovered at rules.rewind_index, for rows that have a rewind, oldest first."""
    if len(offsets) == 0:
        return np.zeros(0, dtype=np.bool_)
    rows, width = offsets.shape
    flat = offsets.ravel()
    lower = np.empty(rows * width, dtype=np.bool_)
    np.less(flat[1:], flat[:-1], out=lower[:-1])  # cell i: from cell i to i + 1 (over the flat block, as _steps_down)
    # the first rewind's column; the last column (a row's last cell with the next row's first, or unset) is never
    # reached, since every row has a rewind before it
    index = lower.reshape(rows, width).argmax(axis=1) + 1
    before = flat.take(np.arange(0, rows * width, width) + index - 1)
    after = np.arange(width)[None, :] >= index[:, None]
    recovered = _row_any((offsets >= before[:, None]) & after)
    return recovered


def _is_lag_always_not_zero(lags: Ints, allowed_lag: int) -> Bools:
    """rules.is_lag_always_not_zero: no known lag at or below the allowance."""
    never: Bools = ~_row_any((lags != NO_LAG) & (lags <= allowed_lag))
    return never


def _is_stalled(offsets: I64) -> Bools:
    """rules.is_stalled: every commit has the same offset (in any order)."""
    stalled: Bools = ~_row_any(offsets != offsets[:, :1])
    return stalled


def _is_lag_not_decreasing(lags: Ints, oldest: I64) -> Bools:
    """rules.is_lag_not_decreasing: the known lags never strictly decrease, unknown ones skipped."""
    known = lags != NO_LAG
    if known.all():
        return ~_steps_down(lags, oldest)
    lags = _in_order(lags, oldest)
    known = lags != NO_LAG
    columns = np.arange(lags.shape[1])
    newest_known = np.maximum.accumulate(np.where(known, columns, -1), axis=1)
    previous = np.concatenate((np.full((len(lags), 1), -1), newest_known[:, :-1]), axis=1)
    previous_lag = np.take_along_axis(lags, np.maximum(previous, 0), axis=1)
    decreased = known & (previous >= 0) & (lags < previous_lag)
    return ~_row_any(decreased)


def _steps_down(block: Ints, oldest: I64) -> Bools:
    """Per row: some value is lower than the one before it, reading the row from `oldest` round to its newest.
    Every pair of neighbours in the ring is compared, the last column with the first included, except the one
    across `oldest` (newest -> oldest), so a full ring is judged without putting it in order. The pairs are
    compared over the flat block (one contiguous pass, 4x faster than over 2-D slices); the pair that this puts in
    each row's last column (with the next row's first) is then replaced by the row's own round the end."""
    rows, width = block.shape
    flat = block.ravel()
    lower = np.empty(rows * width, dtype=np.bool_)
    np.less(flat[1:], flat[:-1], out=lower[:-1])  # cell i: from cell i to i + 1
    by_row = lower.reshape(rows, width)
    np.less(block[:, 0], block[:, -1], out=by_row[:, -1])  # the last column: round to column 0 of the same row
    lower[np.arange(0, rows * width, width) + newest_column(oldest, width)] = False  # from the newest to the oldest
    return _row_any(by_row)


def _in_order(block: NDArray[_Int], oldest: I64) -> NDArray[_Int]:
    """The rows oldest first (a copy when some row is rotated), by one flat `take`."""
    if not oldest.any():
        return block
    rows, width = block.shape
    cells = _rotations(width)[oldest]
    cells += np.arange(0, rows * width, width)[:, None]
    ordered: NDArray[_Int] = block.ravel().take(cells)
    return ordered


@cache
def _rotations(width: int) -> I64:
    """Row `oldest`: the columns of a ring of `width` whose oldest value is in column `oldest`, oldest first."""
    table: I64 = np.add.outer(np.arange(width), np.arange(width)) % width
    table.flags.writeable = False  # shared by every call
    return table


def _row_any(mask: Bools) -> Bools:
    """Per row of a 2-D mask: any True. A window is a few columns, over which numpy's `any(axis=1)` (one short
    reduction per row) costs several times more than OR-ing the columns into one vector; wide masks (HWM
    histories) keep the reduction."""
    width = mask.shape[1]
    if width > _FOLD_COLUMNS or width == 0:
        return np.asarray(mask.any(axis=1), dtype=np.bool_)
    found: Bools = mask[:, 0].copy()
    for column in range(1, width):
        found |= mask[:, column]
    return found


def _newest_column(mask: Bools) -> tuple[Bools, I64]:
    """(any, index of the last True column) per row of a 2-D mask."""
    found = _row_any(mask)
    index: I64 = mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)
    return found, index


def count_at_most(values: I64, history: I64, x: I64, width: int) -> I64:
    """How many of the first `width` columns of `values[history]` are <= x, for histories that never go down: a
    bisection over all look-ups at once (log2(width) gathers instead of `width` comparisons each)."""
    count = np.zeros(len(x), dtype=np.int64)
    flat = values.ravel()
    last_cell = history * values.shape[1] - 1  # + count = the cell of the count-th column
    step = 1 << (width.bit_length() - 1) if width else 0
    while step:
        probe = count + step
        taken = (probe <= width) & (flat[last_cell + np.minimum(probe, width)] <= x)
        count += step * taken
        step >>= 1
    return count


def _nothing_produced_since(c: WindowColumns, rows: I64, since_ms: I64) -> Bools:
    """rules._nothing_produced_since: walking back from the newest sample, the HWM stays at the newest value until
    a sample at or before `since_ms` (or the oldest sample); and the newest sample is after `since_ms`."""
    history = c.hwm_row[rows]
    offsets, times, real = c.hwm_offsets[history], c.hwm_times_ms[history], c.hwm_count[history]
    width = offsets.shape[1]
    newest = offsets[:, -1]
    is_real = np.arange(width)[None, :] >= (width - real)[:, None]
    stops = is_real & ((offsets != newest[:, None]) | (times <= since_ms[:, None]))
    found, index = _newest_column(stops)
    flat_until_stop = ~found | (offsets[np.arange(len(rows)), index] == newest)
    quiet: Bools = (real > 0) & (times[:, -1] > since_ms) & flat_until_stop
    return quiet


def _waiting_since(c: WindowColumns, rows: I64, last_ts: I64) -> I64:
    """timelag.waiting_since_ms: the sample after the newest HWM at or below the last commit, else the commit
    (`last_ts`: the newest commit time of `rows`)."""
    last_offset = c.last_offset[rows]
    history = c.hwm_row[rows]
    width = c.hwm_offsets.shape[1]
    real = c.hwm_count[history]
    sorted_ = c.hwm_offsets_sorted[history]
    index = np.zeros(len(rows), dtype=np.int64)
    # sorted: the newest sample <= the offset is the last of those counted (padding repeats the oldest sample,
    # so it is counted exactly when the oldest real one is)
    fast = np.flatnonzero(sorted_)
    counted = count_at_most(c.hwm_offsets, history[fast], last_offset[fast], width)
    found = np.zeros(len(rows), dtype=np.bool_)
    found[fast] = counted > width - real[fast]
    index[fast] = counted - 1
    slow = np.flatnonzero(~sorted_)
    if len(slow):
        offsets = c.hwm_offsets[history[slow]]
        is_real = np.arange(width)[None, :] >= (width - real[slow])[:, None]
        found[slow], index[slow] = _newest_column(is_real & (offsets <= last_offset[slow, None]))
    after = c.hwm_times_ms[history, np.clip(index + 1, 0, width - 1)]
    since: I64 = np.where(found, np.maximum(last_ts, after), last_ts)
    return since


def _fresh_lags(c: WindowColumns, rows: I64) -> I64:
    """rules.fresh_lags: lag at each commit against timelag.hwm_at(commit time); the stored lag where unknown."""
    offsets, stored_times, stored = c.offsets[rows], c.stored_times[rows], c.lags[rows]
    history = c.hwm_row[rows]
    width = c.hwm_offsets.shape[1]
    # the HWM sample times in the stored times' terms (less the epoch), so the commit times stay as stored
    h_first = c.hwm_times_ms[history, :1] - c.epoch_ms
    h_last = c.hwm_times_ms[history, -1:] - c.epoch_ms
    # hwm_at: None before the oldest sample (column 0 repeats it) or without samples; the newest from its time on
    unknown = (c.hwm_count[history][:, None] == 0) | (stored_times < h_first)
    fresh = np.maximum(c.hwm_offsets[history, -1:] - offsets, 0)
    # between two samples: only in the rows whose history spans some time
    spans = np.flatnonzero(h_first[:, 0] < h_last[:, 0])
    r_span, k_in = np.nonzero(~unknown[spans] & (stored_times[spans] < h_last[spans]))
    r_in = spans[r_span]
    if len(r_in):
        # the newest pair of real samples (i-1, i) with t[i-1] <= time <= t[i]; none found -> the oldest sample
        h = history[r_in]
        t = stored_times[r_in, k_in].astype(np.int64) + c.epoch_ms
        pair = np.zeros(len(h), dtype=np.int64)
        found = np.ones(len(h), dtype=np.bool_)
        fast = np.flatnonzero(c.hwm_times_sorted[h])
        # sorted times: i = how many of samples 0..m-2 are <= t (always a pair when oldest <= t < newest)
        pair[fast] = count_at_most(c.hwm_times_ms, h[fast], t[fast], width - 1)
        slow = np.flatnonzero(~c.hwm_times_sorted[h])
        if len(slow):
            found[slow], pair[slow] = _newest_pair(c, h[slow], t[slow])
        pair = np.maximum(pair, 1)
        t0, t1 = c.hwm_times_ms[h, pair - 1], c.hwm_times_ms[h, pair]
        o0, o1 = c.hwm_offsets[h, pair - 1], c.hwm_offsets[h, pair]
        flat = t1 == t0
        rise, elapsed = o1 - o0, t - t0
        risky = found & ~flat & (np.abs(rise.astype(np.float64)) * np.abs(elapsed) >= _OVERFLOW_GUARD)
        between = o0 + rise * elapsed // np.where(flat, 1, t1 - t0)
        value = np.where(found, np.where(flat, o1, between), c.hwm_offsets[h, 0])
        for q in np.flatnonzero(risky):  # exact Python ints where int64 might overflow
            real = slice(width - int(c.hwm_count[h[q]]), width)
            exact = hwm_at(int(t[q]), c.hwm_offsets[h[q], real].tolist(), c.hwm_times_ms[h[q], real].tolist())
            value[q] = exact if exact is not None else 0
        fresh[r_in, k_in] = np.maximum(value - offsets[r_in, k_in], 0)
    lags: I64 = np.where(unknown, stored, fresh)
    return lags


def _newest_pair(c: WindowColumns, history: I64, t: I64) -> tuple[Bools, I64]:
    """For histories whose times go back somewhere: (found, i) of the newest real pair with t[i-1] <= t <= t[i],
    comparing every pair (the scalar loop's answer whatever the order)."""
    times = c.hwm_times_ms[history]
    width = times.shape[1]
    first_pair = (width - c.hwm_count[history] + 1)[:, None]
    match = (times[:, :-1] <= t[:, None]) & (t[:, None] <= times[:, 1:]) & (np.arange(1, width)[None, :] >= first_pair)
    found, index = _newest_column(match)
    return found, index + 1
