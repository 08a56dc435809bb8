"""`timelag.time_lag_seconds` over many group-partitions at once (pure, numpy): the interpolated time lag that
/metrics exports for every partition, without a `PartitionVerdict` each.

Histories whose offsets never go down (nearly all) are searched by bisection; the others, and the rare rows where an
int64 product could lose exactness, go through the scalar function, so every value is the float it returns.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lag.evaluate.columnar.block import I64, HwmHistories
from lag.evaluate.columnar.rules import count_at_most
from lag.evaluate.timelag import time_lag_seconds

F64 = NDArray[np.float64]
_EXACT = float(2**53)
"""Below this an int64 is a float64 exactly, so numpy's division rounds as Python's int / int does."""


def time_lags(committed: I64, known: NDArray[np.bool_], h: HwmHistories, history: I64, now_ms: int) -> F64:
    """Per row: seconds since the log end was at `committed` (the newest commit); NaN where `time_lag_seconds`
    gives None, and for rows not `known` (no commit)."""
    out = np.full(len(committed), np.nan)
    every = bool(known.all())  # the usual case: no row to leave out, so no copies of the columns
    rows = np.arange(len(committed)) if every else np.flatnonzero(known)
    hist, c = (history, committed) if every else (history[rows], committed[rows])
    width = h.offsets.shape[1]
    real = h.count[hist]
    caught = (real > 0) & (c >= h.offsets[:, -1][hist])  # a history's newest sample, from a table of histories
    out[rows[caught]] = 0.0
    open_ = ~caught & (real >= 2)
    sorted_ = h.offsets_sorted[hist]
    fast = np.flatnonzero(open_ & sorted_)
    hf, cf, rf = hist[fast], c[fast], real[fast]
    # sorted: the newest pair bracketing c is (k-1, k), k = samples <= c; none when c is below the oldest
    k = count_at_most(h.offsets, hf, cf, width)
    bracket = k > width - rf
    lo = np.where(bracket, k - 1, width - rf)
    hi = np.where(bracket, k, width - 1)
    lo_o, hi_o = h.offsets[hf, lo], h.offsets[hf, hi]
    lo_t, hi_t = h.times_ms[hf, lo], h.times_ms[hf, hi]
    defined = hi_o != lo_o  # extrapolation needs two distinct offsets
    rise, span, elapsed = hi_o - cf, hi_t - lo_t, hi_o - lo_o
    exact = (
        (np.abs(rise.astype(np.float64)) * np.abs(span.astype(np.float64)) < _EXACT)
        & (np.abs(elapsed) < _EXACT)
        & (np.abs(hi_t) < _EXACT)
        & (abs(now_ms) < _EXACT)
    )
    easy = defined & exact
    predicted = hi_t[easy].astype(np.float64) - (rise[easy] * span[easy]).astype(np.float64) / elapsed[easy]
    lag = (float(now_ms) - predicted) / 1000.0
    out[rows[fast[easy]]] = np.where(lag > 0.0, lag, 0.0)
    scalar = np.concatenate((np.flatnonzero(open_ & ~sorted_), fast[defined & ~exact]))
    for r in scalar.tolist():
        n = int(real[r])
        offsets = h.offsets[hist[r], width - n :].tolist()
        times = h.times_ms[hist[r], width - n :].tolist()
        value = time_lag_seconds(int(c[r]), offsets, times, now_ms)
        out[rows[r]] = np.nan if value is None else value
    return out
