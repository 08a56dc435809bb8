"""Latency quantiles over a recent window from cumulative Prometheus histogram buckets (pure): the status page reads
the canary's own histograms in-process and subtracts an older reading, as `histogram_quantile(rate(...))` would."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

Buckets = Mapping[float, float]
"""Upper bound (`le`, +Inf included) -> cumulative count of observations at or below it."""


def bucket_delta(now: Buckets, before: Buckets | None) -> dict[float, float]:
    """Observations that arrived between two readings of one histogram; a reset (a count going down, as after a
    restart of the series) counts the new reading whole, as Prometheus' rate() does."""
    if before is None or any(now.get(le, 0.0) < count for le, count in before.items()):
        return dict(now)
    return {le: count - before.get(le, 0.0) for le, count in now.items()}


def merge(readings: Iterable[Buckets]) -> dict[float, float]:
    """Bucket counts of several series added up (one AZ's brokers)."""
    total: dict[float, float] = {}
    for buckets in readings:
        for le, count in buckets.items():
            total[le] = total.get(le, 0.0) + count
    return total


def quantile(q: float, buckets: Buckets) -> float | None:
    """The q-quantile (0 < q < 1) by linear interpolation inside the bucket it falls in, as Prometheus'
    `histogram_quantile`; in the +Inf bucket, the largest finite bound. None without observations."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q} is not between 0 and 1")
    bounds = sorted(buckets)
    if not bounds:
        return None
    total = buckets[bounds[-1]]
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for le in bounds:
        count = buckets[le]
        if count >= rank:
            if math.isinf(le):
                finite = [b for b in bounds if not math.isinf(b)]
                return finite[-1] if finite else None
            if count == lower_count:
                return le
            return lower_bound + (le - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = le, count
    return None
