"""Group evaluation: reads groups' windows from the store, applies the mode's rules to every partition and
aggregates as Burrow's `evaluateConsumerStatus` does. Pure apart from reading the store; the clock is an argument.

Two paths give the same answers. The columnar one (`evaluate_groups`, used by `evaluate_group` and
`evaluate_cluster`) gathers the windows of many groups into numpy blocks (`columnar/block.py`), decides every partition
with `columnar/rules.py` and rolls the groups up with array reductions; `PartitionVerdict`/`GroupStatus` objects are
built only for the groups a caller reads. The scalar one (`tests/support/lag_reference.py`) runs `rules.py` one
partition at a time and is the readable reference the columnar path is tested against.

Aggregation (Burrow's `evaluateConsumerStatus`, `core/internal/evaluator/caching.go`): status is the worst partition
status with STOP/STALL/REWIND reported as ERR; totallag sums current lags; maxlag is the first partition (topic, then
partition order) with the largest current lag; complete is the fraction of partitions whose window is full; placeholder
partitions count in partition_count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lag.evaluate.columnar.block import I64, HwmHistories, PartitionIndex, gather, gather_histories, partition_index
from lag.evaluate.columnar.rules import decide
from lag.evaluate.columnar.timelag import time_lags
from lag.evaluate.rules import RULE_STATUS, Rule, RuleParams, Window, explain
from lag.protocol import CommitPoint, GroupStatus, PartitionVerdict, SourceFreshness, Status, not_found
from lag.store.offsets import OffsetStore
from lag.store.streams_starts import uncommitted_lag
from lag.store.windows import NO_LAG

BLOCK_ROWS = 32_768
"""Group-partitions decided per numpy block: large enough to amortise numpy's per-call cost, small enough that a
block's temporaries stay in cache."""

_STATUS_OF_RULE = np.array([RULE_STATUS[rule] for rule in Rule], dtype=np.int64)
_RULES = tuple(Rule)
"""Rule by value (the enum's values are 0..n-1), cheaper than `Rule(value)`."""


@dataclass(frozen=True, slots=True)
class GroupVerdicts:
    """The columnar result for some groups of one cluster: per partition and per group, as arrays.

    Partition arrays follow `index` (group after group, topic then partition order). Reason texts and time lags
    are not here: `Evaluator.group_status` computes them when it builds a group's objects.
    """

    cluster: str
    now_ms: int
    index: PartitionIndex
    rules: NDArray[np.uint8]
    """Per partition: the `Rule` that fired."""
    status: I64
    """Per partition: the `Status` value."""
    current_lag: I64
    complete: NDArray[np.float64]
    last_offset: I64
    """Per partition: the newest committed offset (any value where the rule is NO_COMMIT)."""
    group_status: I64
    """Per group: OK, WARN or ERR (`Status` values)."""
    group_totallag: I64
    group_complete: NDArray[np.float64]
    group_maxlag: I64
    """Per group: index of the maxlag partition; -1 for a group without partitions."""
    group_worst: I64
    """Per group: index of the first partition with the worst status; -1 for a group without partitions."""
    histories: HwmHistories | None = None
    """The distinct HWM histories of the partitions (`history[i]` is partition i's), for time lags."""
    history: I64 | None = None


class Evaluator:
    """Evaluates groups stored in an `OffsetStore` with one rule set."""

    def __init__(self, store: OffsetStore, params: RuleParams, health: SourceFreshness | None = None) -> None:
        self.store = store
        self.params = params
        self.health = health

    def evaluate_group(self, cluster: str, group: str, now_ms: int) -> GroupStatus:
        """The group's status at `now_ms`; NOTFOUND when unknown or expired, UNKNOWN while its cluster is down."""
        if not self.store.has_group(cluster, group, now_ms):
            return not_found(cluster, group)
        why = self._unavailable(cluster, now_ms)
        if why is not None:
            return _unknown(cluster, group, why)
        gid = self.store.group_id(cluster, group)
        if gid is None:  # has_group said it is stored
            raise KeyError(group)
        verdicts = self.evaluate_groups(cluster, [gid], now_ms)
        return self.group_status(verdicts, 0, Details(verdicts))

    def evaluate_named(self, cluster: str, groups: Sequence[str], now_ms: int) -> list[GroupStatus]:
        """What `evaluate_group` gives each of `groups`, in their order, the stored ones decided in one columnar
        pass: the objects of a few groups picked from a scrape's rows (the status page's listed groups)."""
        why = self._unavailable(cluster, now_ms)
        out: list[GroupStatus | None] = []
        rows: list[int] = []  # the position in `out` of each group decided
        gids: list[int] = []
        for name in groups:
            gid = self.store.group_id(cluster, name) if self.store.has_group(cluster, name, now_ms) else None
            if gid is None:
                out.append(not_found(cluster, name))
            elif why is not None:
                out.append(_unknown(cluster, name, why))
            else:
                rows.append(len(out))
                gids.append(gid)
                out.append(None)
        if gids:
            verdicts = self.evaluate_groups(cluster, gids, now_ms)
            details = Details(verdicts)
            for row, at in enumerate(rows):
                out[at] = self.group_status(verdicts, row, details)
        return [s for s in out if s is not None]

    def evaluate_cluster(self, cluster: str, now_ms: int) -> Iterator[GroupStatus]:
        """Every group of the cluster in name order, decided in one columnar pass (expired groups are NOTFOUND)."""
        names, ids, expired = self.store.groups_at(cluster, now_ms)
        all_expired = expired is not None and bool(expired.all())
        why = self._unavailable(cluster, now_ms) if names and not all_expired else None
        live_ids = ids if expired is None else ids[~expired]
        verdicts = self.evaluate_groups(cluster, live_ids, now_ms) if why is None else None
        details = Details(verdicts) if verdicts is not None else None
        row = 0  # the group's row in `verdicts`: live groups keep their name order
        for i, name in enumerate(names):
            if expired is not None and expired[i]:
                yield not_found(cluster, name)
            elif verdicts is None:
                yield _unknown(cluster, name, why or "")
            else:
                yield self.group_status(verdicts, row, details)
                row += 1

    def evaluate_groups(self, cluster: str, gids: Sequence[int] | I64, now_ms: int) -> GroupVerdicts:
        """The columnar pass: decide every partition of the given groups and roll each group up, as arrays.

        No expiry or health check here (`evaluate_group`/`evaluate_cluster` do those)."""
        index = partition_index(self.store, gids)
        total = len(index.slots)
        rules = np.empty(total, dtype=np.uint8)
        current_lag = np.empty(total, dtype=np.int64)
        complete = np.empty(total, dtype=np.float64)
        last_offset = np.empty(total, dtype=np.int64)
        histories, history = gather_histories(self.store, index.hwm_rows)  # shared by many groups: read once
        for lo in range(0, total, BLOCK_ROWS):
            hi = min(lo + BLOCK_ROWS, total)
            block = gather(self.store, index.slots[lo:hi], history[lo:hi], histories)
            decided = decide(block, now_ms, self.params)
            rules[lo:hi], current_lag[lo:hi], complete[lo:hi] = decided.rules, decided.current_lag, decided.complete
            last_offset[lo:hi] = decided.last_offset
        self._count_from_log_start(cluster, index, rules, current_lag)
        status = _STATUS_OF_RULE[rules]
        verdicts = _roll_up(cluster, now_ms, index, rules, status, current_lag, complete, last_offset)
        return dataclasses.replace(verdicts, histories=histories, history=history)

    def _count_from_log_start(self, cluster: str, index: PartitionIndex, rules: NDArray[np.uint8], lag: I64) -> None:
        """A streams group's partition without a commit gets the lag Kafka gives it, from the log start to the HWM
        (lag/store/streams_starts.py); every other placeholder keeps Burrow's 0. In place, on `lag`."""
        starts = self.store.streams_starts
        gids = [g for name in starts.groups(cluster) if (g := self.store.group_id(cluster, name)) is not None]
        if not gids or len(index.slots) == 0:
            return
        group_of_row = np.repeat(index.gids, np.diff(index.starts))
        rows = np.isin(group_of_row, gids) & (rules == Rule.NO_COMMIT) & (index.hwm_rows >= 0)
        hwms = self.store.hwms
        for at in np.flatnonzero(rows).tolist():
            start = starts.start(cluster, hwms.topic_name(int(index.topic_ids[at])), int(index.partitions[at]))
            found = uncommitted_lag(hwms.latest_in_row(int(index.hwm_rows[at])), start)
            if found is not None:
                lag[at] = found

    def group_status(self, verdicts: GroupVerdicts, group: int, details: Details | None = None) -> GroupStatus:
        """The objects of the `group`-th group of a columnar result: verdicts with reasons and time lags, the
        latter two read through `details` (pass one `Details` for every group of one result)."""
        index, store, p, now_ms = verdicts.index, self.store, self.params, verdicts.now_ms
        details = details if details is not None else Details(verdicts)
        gid = int(index.gids[group])
        owners = store.owners(gid)
        lo, hi = int(index.starts[group]), int(index.starts[group + 1])
        columns = zip(
            index.topic_ids[lo:hi].tolist(),
            index.partitions[lo:hi].tolist(),
            index.slots[lo:hi].tolist(),
            index.hwm_rows[lo:hi].tolist(),
            verdicts.rules[lo:hi].tolist(),
            verdicts.current_lag[lo:hi].tolist(),
            verdicts.complete[lo:hi].tolist(),
            strict=True,
        )
        out = []
        for at, (topic_id, partition, slot, row, rule_id, current_lag, complete) in enumerate(columns, lo):
            topic = store.hwms.topic_name(topic_id)
            owner, client_id = owners.get((topic, partition), ("", ""))
            if p.mode == "burrow-1.2":
                client_id = ""  # 1.2.1 never copied it into the status
            rule = _RULES[rule_id]
            if rule is Rule.NO_COMMIT:
                out.append(_placeholder(topic, partition, owner, client_id, current_lag))
                continue
            offsets, timestamps, lags = store.commits.read(slot)
            hwm_offsets, hwm_times = details.history(at) if row >= 0 else ([], [])
            window = Window(offsets, timestamps, lags, hwm_offsets, hwm_times, current_lag)
            out.append(
                PartitionVerdict(
                    topic=topic,
                    partition=partition,
                    status=RULE_STATUS[rule],
                    start=_point(offsets[0], timestamps[0], lags[0]),
                    end=_point(offsets[-1], timestamps[-1], lags[-1]),
                    current_lag=current_lag,
                    complete=complete,
                    owner=owner,
                    client_id=client_id,
                    reason=explain(rule, window, now_ms, p),
                    lag_seconds=details.lag_seconds[at],
                )
            )
        return aggregate(verdicts.cluster, store.group_name(gid), tuple(out))

    def _unavailable(self, cluster: str, now_ms: int) -> str | None:
        return self.health.unavailable_reason(cluster, now_ms) if self.health is not None else None


def _unknown(cluster: str, group: str, why: str) -> GroupStatus:
    return GroupStatus(cluster, group, Status.UNKNOWN, 0.0, (), 0, None, 0, f"cluster {cluster}: {why}")


class Details:
    """What `group_status` reads beyond a columnar result's arrays, computed once for all its groups: every
    partition's time lag in one columnar pass (`time_lags`, the same floats as `time_lag_seconds`) and each HWM
    history as lists, once per history however many groups read its partition."""

    def __init__(self, verdicts: GroupVerdicts) -> None:
        self.verdicts = verdicts
        histories, history = verdicts.histories, verdicts.history
        if histories is None or history is None:
            raise ValueError("a columnar result without its HWM histories (not from `evaluate_groups`)")
        self._histories, self._history = histories, history
        committed = verdicts.rules != Rule.NO_COMMIT
        lags = time_lags(verdicts.last_offset, committed, histories, history, verdicts.now_ms)
        self.lag_seconds: list[float | None] = [None if x != x else x for x in lags.tolist()]  # NaN: None
        """Per partition of the result, `time_lag_seconds` of its newest commit (None where unknown)."""
        self._lists: dict[int, tuple[list[int], list[int]]] = {}

    def history(self, at: int) -> tuple[list[int], list[int]]:
        """HWMs and their sample times of the `at`-th partition's history, oldest first (shared, not to be changed)."""
        which = int(self._history[at])
        lists = self._lists.get(which)
        if lists is None:
            h = self._histories
            n, width = int(h.count[which]), h.offsets.shape[1]
            lists = h.offsets[which, width - n :].tolist(), h.times_ms[which, width - n :].tolist()
            self._lists[which] = lists
        return lists


def _placeholder(topic: str, partition: int, owner: str, client_id: str, lag: int = 0) -> PartitionVerdict:
    """Burrow's placeholder: OK, lag 0, unless a streams group's backlog from the log start was counted (`lag`)."""
    reason = "no commit from this group on this partition"
    if lag:
        reason += f"; {lag} records from the log start (a streams group starts there)"
    return PartitionVerdict(topic, partition, Status.OK, None, None, lag, 0.0, owner, client_id, reason)


def _point(offset: int, timestamp_ms: int, lag: int) -> CommitPoint:
    return CommitPoint(offset, timestamp_ms, None if lag == NO_LAG else lag)


def _roll_up(
    cluster: str,
    now_ms: int,
    index: PartitionIndex,
    rules: NDArray[np.uint8],
    status: I64,
    current_lag: I64,
    complete: NDArray[np.float64],
    last_offset: I64,
) -> GroupVerdicts:
    """`aggregate` over every group at once, with segment reductions over the partition arrays."""
    groups = len(index.gids)
    sizes = np.diff(index.starts)
    nonempty = sizes > 0
    starts = index.starts[:-1][nonempty]
    group_status = np.full(groups, int(Status.OK), dtype=np.int64)
    totallag = np.zeros(groups, dtype=np.int64)
    full = np.zeros(groups, dtype=np.int64)
    maxlag = np.full(groups, -1, dtype=np.int64)
    worst = np.full(groups, -1, dtype=np.int64)
    if len(starts):
        group_status[nonempty] = np.maximum.reduceat(np.minimum(status, int(Status.ERR)), starts)
        totallag[nonempty] = np.add.reduceat(current_lag, starts)
        full[nonempty] = np.add.reduceat((complete == 1.0).astype(np.int64), starts)
        maxlag[nonempty] = _first_max(current_lag, starts, sizes[nonempty])
        worst[nonempty] = _first_max(status, starts, sizes[nonempty])
    group_complete = np.divide(full, sizes, out=np.zeros(groups, dtype=np.float64), where=nonempty)
    return GroupVerdicts(
        cluster,
        now_ms,
        index,
        rules,
        status,
        current_lag,
        complete,
        last_offset,
        group_status,
        totallag,
        group_complete,
        maxlag,
        worst,
    )


def _first_max(values: I64, starts: I64, sizes: I64) -> I64:
    """Per segment, the index of the first element equal to the segment's maximum."""
    top = np.maximum.reduceat(values, starts)
    positions = np.arange(len(values))
    candidates = np.where(values == np.repeat(top, sizes), positions, len(values))
    first: I64 = np.minimum.reduceat(candidates, starts)
    return first


def aggregate(cluster: str, group: str, verdicts: tuple[PartitionVerdict, ...]) -> GroupStatus:
    """Burrow's group roll-up of partition verdicts."""
    status = Status.OK
    worst: PartitionVerdict | None = None
    maxlag: PartitionVerdict | None = None
    complete = 0
    lag_seconds: float | None = None
    for v in verdicts:
        if v.status.group_level() > status:
            status = v.status.group_level()
        if worst is None or v.status > worst.status:
            worst = v
        if maxlag is None or v.current_lag > maxlag.current_lag:
            maxlag = v
        if v.complete == 1.0:
            complete += 1
        if v.lag_seconds is not None:
            lag_seconds = v.lag_seconds if lag_seconds is None else max(lag_seconds, v.lag_seconds)
    reason = ""
    if worst is not None and worst.status > Status.OK:
        reason = f"{worst.topic}[{worst.partition}] {worst.status.name}: {worst.reason}"
    return GroupStatus(
        cluster=cluster,
        group=group,
        status=status,
        complete=complete / len(verdicts) if verdicts else 0.0,
        partitions=verdicts,
        partition_count=len(verdicts),
        maxlag=maxlag,
        totallag=sum(v.current_lag for v in verdicts),
        reason=reason,
        lag_seconds=lag_seconds,
    )
