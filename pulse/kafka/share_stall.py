"""Share-group verdicts (pure): a share-partition whose start offset has not moved for longer than a setting while
records wait behind it is STALLED, named with its partition and offset. In a share group the start offset is the
first record not yet completed, so it stays put when one record keeps cycling back (released, or its lock timing
out) toward `group.share.delivery.count.limit` while later records are delivered around it. Without a known lag
(or start offset) a partition is not judged: UNKNOWN, never OK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from pulse.kafka.share_groups import ShareGroup


class ShareStatus(IntEnum):
    """Ordered by severity; the values are what `/metrics` exports."""

    UNKNOWN = -1
    OK = 0
    STALLED = 1


@dataclass(frozen=True)
class SharePartitionVerdict:
    """One share-partition judged."""

    topic: str
    partition: int
    status: ShareStatus
    start_offset: int | None
    lag: int | None
    unmoved_s: float | None
    """Seconds the start offset has stayed where it is (since first seen there); None when it is not known."""

    def reason(self) -> str:
        """The verdict as an operator reads it, naming the partition and the offset."""
        where = f"{self.topic}-{self.partition}"
        if self.status is ShareStatus.STALLED:
            return (
                f"{where}: start offset {self.start_offset} unmoved for {self.unmoved_s:.0f} s "
                f"with {self.lag} records waiting"
            )
        if self.status is ShareStatus.UNKNOWN and self.lag is not None and self.unmoved_s is None:
            return f"{where}: start offset {self.start_offset}, lag {self.lag}; not judged (one read, no window)"
        if self.status is ShareStatus.UNKNOWN:
            return f"{where}: lag not known"
        return f"{where}: start offset {self.start_offset}, lag {self.lag}"


@dataclass(frozen=True)
class ShareGroupVerdict:
    """A share group judged: its worst partition gives its status."""

    group: str
    state: str
    members: int
    status: ShareStatus
    partitions: tuple[SharePartitionVerdict, ...]
    total_lag: int | None
    """The sum of the known lags; None when no partition's lag is known."""

    @property
    def stalled(self) -> tuple[SharePartitionVerdict, ...]:
        return tuple(p for p in self.partitions if p.status is ShareStatus.STALLED)


class StartOffsetHistory:
    """Where each share-partition's start offset was first seen at its current value: the only state the stall
    rule needs. Fed with reads and the time they were made; forgets partitions a read no longer has."""

    def __init__(self) -> None:
        self._since: dict[tuple[str, str, str, int], tuple[int, float]] = {}

    def judge(
        self, cluster: str, groups: tuple[ShareGroup, ...], now_s: float, stall_after_s: float
    ) -> list[ShareGroupVerdict]:
        """Record `groups` (one read of `cluster` at `now_s`) and judge each of them."""
        seen: set[tuple[str, str, str, int]] = set()
        out = []
        for group in groups:
            verdicts = []
            for p in group.partitions:
                key = (cluster, group.group, p.topic, p.partition)
                seen.add(key)
                unmoved: float | None = None
                if p.start_offset is not None:
                    offset, since = self._since.get(key, (p.start_offset, now_s))
                    if offset != p.start_offset:
                        since = now_s
                    self._since[key] = (p.start_offset, since)
                    unmoved = now_s - since
                verdicts.append(judge_partition(p.topic, p.partition, p.start_offset, p.lag, unmoved, stall_after_s))
            out.append(group_verdict(group, tuple(verdicts)))
        for key in [k for k in self._since if k[0] == cluster and k not in seen]:
            del self._since[key]
        return out


def judge_partition(
    topic: str, partition: int, start_offset: int | None, lag: int | None, unmoved_s: float | None, stall_after_s: float
) -> SharePartitionVerdict:
    """STALLED when records wait (lag > 0) and the start offset has not moved for more than `stall_after_s`."""
    if start_offset is None or lag is None or unmoved_s is None:
        status = ShareStatus.UNKNOWN
    elif lag > 0 and unmoved_s > stall_after_s:
        status = ShareStatus.STALLED
    else:
        status = ShareStatus.OK
    return SharePartitionVerdict(topic, partition, status, start_offset, lag, unmoved_s)


def group_verdict(group: ShareGroup, partitions: tuple[SharePartitionVerdict, ...]) -> ShareGroupVerdict:
    """STALLED when a partition is; else OK when a partition is OK and the read had no error; else UNKNOWN (a
    partition the group never fetched from has no start offset, and does not hide the others' verdicts)."""
    statuses = {p.status for p in partitions}
    if ShareStatus.STALLED in statuses:
        status = ShareStatus.STALLED
    elif ShareStatus.OK in statuses and not group.error:
        status = ShareStatus.OK
    else:
        status = ShareStatus.UNKNOWN
    known = [p.lag for p in partitions if p.lag is not None]
    return ShareGroupVerdict(
        group.group, group.state, len(group.members), status, partitions, sum(known) if known else None
    )


def verdict_json(verdict: ShareGroupVerdict) -> dict[str, Any]:
    """One judged share group as the share-group route, `check --json` and `/api/status` give it (pure); a lag or
    start offset not known is null, never 0."""
    return {
        "group": verdict.group,
        "state": verdict.state,
        "members": verdict.members,
        "status": verdict.status.name,
        "totallag": verdict.total_lag,
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "status": p.status.name,
                "start_offset": p.start_offset,
                "lag": p.lag,
                "start_offset_unmoved_s": None if p.unmoved_s is None else round(p.unmoved_s, 3),
                "reason": p.reason(),
            }
            for p in verdict.partitions
        ],
    }


def verdict_from_json(body: Mapping[str, Any]) -> ShareGroupVerdict:
    """`verdict_json`'s output read back (`check --lag-url`): the verdict as the listener judged it, never judged
    again. Raises ValueError on a body of another shape; a status it does not know reads as UNKNOWN."""

    def number(value: Any) -> int | None:
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def status(value: Any) -> ShareStatus:
        return ShareStatus.__members__.get(str(value), ShareStatus.UNKNOWN)

    try:
        partitions = tuple(
            SharePartitionVerdict(
                str(p["topic"])[:255],
                int(p["partition"]),
                status(p.get("status")),
                number(p.get("start_offset")),
                number(p.get("lag")),
                None if p.get("start_offset_unmoved_s") is None else float(p["start_offset_unmoved_s"]),
            )
            for p in body.get("partitions") or []
        )
        return ShareGroupVerdict(
            str(body["group"])[:255],
            str(body.get("state") or "Unknown")[:32],
            int(body.get("members") or 0),
            status(body.get("status")),
            partitions,
            number(body.get("totallag")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a share group's status: {exc}") from exc
