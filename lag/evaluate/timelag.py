"""Lag in time, from the HWM history of a partition (pure; used by `rules.py` and `evaluator.py`).

kafka-lag-exporter's method (its `LookupTable.scala`): the HWM samples are points (offset, time); the time at which the
log end was at the committed offset is interpolated between the two samples around it (or extrapolated from the oldest
and newest when none brackets it), and the time lag is how long ago that was. It approximates the age of the oldest
unconsumed record from the produce rate, without reading records.
"""

from __future__ import annotations

from collections.abc import Sequence


def hwm_at(time_ms: int, hwm_offsets: Sequence[int], hwm_times_ms: Sequence[int]) -> int | None:
    """The HWM at `time_ms`, interpolated linearly between samples (rounded down).

    After the newest sample it is the newest sample (the best known, as Burrow's stored HWM); before the oldest it
    is unknown (None).
    """
    n = len(hwm_offsets)
    if n == 0 or time_ms < hwm_times_ms[0]:
        return None
    if time_ms >= hwm_times_ms[-1]:
        return hwm_offsets[-1]
    for i in range(n - 1, 0, -1):
        t0, t1 = hwm_times_ms[i - 1], hwm_times_ms[i]
        if t0 <= time_ms <= t1:
            o0, o1 = hwm_offsets[i - 1], hwm_offsets[i]
            if t1 == t0:
                return o1
            return o0 + (o1 - o0) * (time_ms - t0) // (t1 - t0)
    return hwm_offsets[0]


def predicted_time_ms(committed: int, hwm_offsets: Sequence[int], hwm_times_ms: Sequence[int]) -> float | None:
    """When the log end was at `committed`, from the HWM history; None with fewer than two distinct samples."""
    n = len(hwm_offsets)
    if n == 0:
        return None
    if committed >= hwm_offsets[-1]:
        return float(hwm_times_ms[-1])
    if n < 2:
        return None
    for i in range(n - 1, 0, -1):
        left_o, right_o = hwm_offsets[i - 1], hwm_offsets[i]
        if left_o <= committed <= right_o and right_o > left_o:
            return _line(committed, left_o, hwm_times_ms[i - 1], right_o, hwm_times_ms[i])
    # No bracketing pair: extrapolate from the oldest and newest points (the consumer is behind the whole history).
    if hwm_offsets[-1] == hwm_offsets[0]:
        return None
    return _line(committed, hwm_offsets[0], hwm_times_ms[0], hwm_offsets[-1], hwm_times_ms[-1])


def _line(offset: int, left_o: int, left_t: int, right_o: int, right_t: int) -> float:
    return right_t - (right_o - offset) * (right_t - left_t) / (right_o - left_o)


def time_lag_seconds(
    committed: int, hwm_offsets: Sequence[int], hwm_times_ms: Sequence[int], now_ms: int
) -> float | None:
    """Seconds since the log end was at the committed offset; 0 when caught up; None when unknown."""
    if hwm_offsets and committed >= hwm_offsets[-1]:
        return 0.0
    predicted = predicted_time_ms(committed, hwm_offsets, hwm_times_ms)
    if predicted is None:
        return None
    return max(0.0, (now_ms - predicted) / 1000.0)


def waiting_since_ms(
    last_offset: int, last_commit_ms: int, hwm_offsets: Sequence[int], hwm_times_ms: Sequence[int]
) -> int:
    """Since when records have been waiting for the consumer after its last commit.

    The newest HWM sample at or below the committed offset shows the consumer caught up at that time; records
    were waiting from the next sample on. Without such a sample they were waiting for the whole history, so from
    the last commit (the consumer was alive then). Used by the idle-aware STOP rule: a quiet topic leaves nothing
    waiting, so a consumer that does not commit on it is idle, not stopped.
    """
    since = last_commit_ms
    for i in range(len(hwm_offsets) - 1, -1, -1):
        if hwm_offsets[i] <= last_offset:
            since = max(since, hwm_times_ms[min(i + 1, len(hwm_offsets) - 1)])
            break
    return since


# -- exact time lag: the age of the record at the committed offset ---------------------------------------------


def exact_lag_seconds(record_timestamp_ms: int | None, current_lag: int, now_ms: int) -> float | None:
    """Seconds since the first unconsumed record was written (its Kafka timestamp); 0 when caught up.

    Exact where the interpolation only estimates, but only as exact as the timestamps: CreateTime comes from the
    producer's clock; LogAppendTime from the leader's.
    """
    if current_lag <= 0:
        return 0.0
    if record_timestamp_ms is None:
        return None
    return max(0.0, (now_ms - record_timestamp_ms) / 1000.0)
