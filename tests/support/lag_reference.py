"""The scalar reference of the lag evaluator: `Evaluator.evaluate_group` through `lag/evaluate/rules.py`, one
partition at a time, as readable code. The columnar path is tested against it; kept out of the product (an oracle is
never on the product's path)."""

from __future__ import annotations

from lag.evaluate.evaluator import Evaluator, _placeholder, _point, _unknown, aggregate
from lag.evaluate.rules import RULE_SETS, RULE_STATUS, Rule, Window, explain
from lag.evaluate.timelag import time_lag_seconds
from lag.protocol import GroupStatus, PartitionVerdict, not_found
from lag.store.offsets import PartitionSlot


def evaluate_group_reference(evaluator: Evaluator, cluster: str, group: str, now_ms: int) -> GroupStatus:
    """`evaluator.evaluate_group` through `rules.py`, one partition at a time."""
    if not evaluator.store.has_group(cluster, group, now_ms):
        return not_found(cluster, group)
    why = evaluator._unavailable(cluster, now_ms)
    if why is not None:
        return _unknown(cluster, group, why)
    slots = evaluator.store.slots(cluster, group)
    verdicts = tuple(evaluate_partition_reference(evaluator, cluster, slot, now_ms) for slot in slots)
    return aggregate(cluster, group, verdicts)


def evaluate_partition_reference(
    evaluator: Evaluator, cluster: str, slot: PartitionSlot, now_ms: int
) -> PartitionVerdict:
    """One partition's verdict from its window, through the scalar rules."""
    p = evaluator.params
    offsets, timestamps, lags = evaluator.store.commits.read(slot.slot)
    hwm_offsets, hwm_times = evaluator.store.hwms.history(cluster, slot.topic, slot.partition)
    client_id = "" if p.mode == "burrow-1.2" else slot.client_id  # 1.2.1 never copied it into the status
    if not offsets:
        return _placeholder(slot.topic, slot.partition, slot.owner, client_id)
    current_lag = max(0, hwm_offsets[-1] - offsets[-1]) if hwm_offsets else 0
    complete = 1.0 if len(offsets) >= p.intervals else len(offsets) / p.intervals
    window = Window(offsets, timestamps, lags, hwm_offsets, hwm_times, current_lag)
    rule = Rule.MINIMUM_COMPLETE if complete < p.minimum_complete else RULE_SETS[p.mode](window, now_ms, p)
    return PartitionVerdict(
        topic=slot.topic,
        partition=slot.partition,
        status=RULE_STATUS[rule],
        start=_point(offsets[0], timestamps[0], lags[0]),
        end=_point(offsets[-1], timestamps[-1], lags[-1]),
        current_lag=current_lag,
        complete=complete,
        owner=slot.owner,
        client_id=client_id,
        reason=explain(rule, window, now_ms, p),
        lag_seconds=time_lag_seconds(offsets[-1], hwm_offsets, hwm_times, now_ms),
    )
