"""The stalled start-offset rule without a broker: records waiting behind an unmoved start offset for longer than
the setting, named with partition and offset; unknown lag is never judged OK."""

from __future__ import annotations

from pulse.kafka.share_groups import ShareGroup, ShareMember, SharePartition
from pulse.kafka.share_stall import ShareStatus, StartOffsetHistory, judge_partition

STALL_S = 60.0


def group(*partitions: SharePartition, error: str = "") -> tuple[ShareGroup, ...]:
    return (ShareGroup("g", "Stable", (ShareMember("m", "c", "h", 1),), partitions, error),)


def test_unmoved_start_offset_with_records_waiting_is_stalled_and_named() -> None:
    history = StartOffsetHistory()
    assert history.judge("c", group(SharePartition("t", 0, 40, 9)), 0.0, STALL_S)[0].status is ShareStatus.OK
    held = history.judge("c", group(SharePartition("t", 0, 40, 3)), 60.0, STALL_S)[0]
    assert held.status is ShareStatus.OK  # exactly the setting: not yet past it
    verdict = history.judge("c", group(SharePartition("t", 0, 40, 3)), 61.0, STALL_S)[0]
    assert verdict.status is ShareStatus.STALLED and verdict.total_lag == 3
    assert [p.reason() for p in verdict.stalled] == ["t-0: start offset 40 unmoved for 61 s with 3 records waiting"]


def test_a_moving_start_offset_restarts_the_clock() -> None:
    history = StartOffsetHistory()
    history.judge("c", group(SharePartition("t", 0, 40, 9)), 0.0, STALL_S)
    verdict = history.judge("c", group(SharePartition("t", 0, 41, 9)), 100.0, STALL_S)[0]
    assert verdict.status is ShareStatus.OK and verdict.partitions[0].unmoved_s == 0.0
    assert history.judge("c", group(SharePartition("t", 0, 41, 9)), 161.0, STALL_S)[0].status is ShareStatus.STALLED


def test_nothing_waiting_is_never_stalled() -> None:
    history = StartOffsetHistory()
    history.judge("c", group(SharePartition("t", 0, 40, 0)), 0.0, STALL_S)
    assert history.judge("c", group(SharePartition("t", 0, 40, 0)), 1000.0, STALL_S)[0].status is ShareStatus.OK


def test_unknown_lag_or_start_is_unknown_never_ok() -> None:
    assert judge_partition("t", 0, 40, None, 1000.0, STALL_S).status is ShareStatus.UNKNOWN
    assert judge_partition("t", 0, None, None, None, STALL_S).status is ShareStatus.UNKNOWN
    history = StartOffsetHistory()
    only_unknown = history.judge("c", group(SharePartition("t", 1, None, None)), 0.0, STALL_S)[0]
    assert only_unknown.status is ShareStatus.UNKNOWN and only_unknown.total_lag is None
    mixed = history.judge("c", group(SharePartition("t", 0, 5, 2), SharePartition("t", 1, None, None)), 0.0, STALL_S)
    assert mixed[0].status is ShareStatus.OK and mixed[0].total_lag == 2  # an unfetched partition hides nothing
    failed = history.judge("c", group(SharePartition("t", 0, 5, 2), error="describe error 15"), 0.0, STALL_S)
    assert failed[0].status is ShareStatus.UNKNOWN


def test_partitions_a_read_no_longer_has_are_forgotten() -> None:
    history = StartOffsetHistory()
    history.judge("c", group(SharePartition("t", 0, 40, 9)), 0.0, STALL_S)
    history.judge("c", group(), 10.0, STALL_S)  # the group lost its state (deleted, offsets reset)
    verdict = history.judge("c", group(SharePartition("t", 0, 40, 9)), 100.0, STALL_S)[0]
    assert verdict.status is ShareStatus.OK  # counted again from its return, not from before
