"""One consumer group's lag from a single snapshot (pure): committed offsets against high watermarks.

Lag per partition is `max(0, hwm - committed)`, as Burrow computes it; partitions without a known high watermark
are counted apart, never as zero lag.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_pulse.check.facts import GroupLag

TopicPartition = tuple[str, int]


def group_lag(
    group: str, state: str, committed: Mapping[TopicPartition, int], hwms: Mapping[TopicPartition, int]
) -> GroupLag:
    """Total and largest partition lag of `group`; `hwms` may lack partitions whose leader did not answer."""
    total = 0
    worst: tuple[int, TopicPartition] | None = None
    known = unknown = 0
    for tp, offset in sorted(committed.items()):
        hwm = hwms.get(tp)
        if hwm is None:
            unknown += 1
            continue
        known += 1
        lag = max(0, hwm - offset)
        total += lag
        if worst is None or lag > worst[0]:
            worst = (lag, tp)
    return GroupLag(
        group=group,
        state=state,
        total_lag=total,
        max_lag=worst[0] if worst is not None else 0,
        max_lag_partition=f"{worst[1][0]}-{worst[1][1]}" if worst is not None else None,
        partitions=known,
        unknown_partitions=unknown,
    )
