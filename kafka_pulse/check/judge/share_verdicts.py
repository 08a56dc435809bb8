"""Share groups (KIP-932) in the check's `lag` section (pure): the share-stall rule's verdicts (pulse/kafka/
share_stall.py, the one place a share group is judged) folded into the section beside the consumer groups', by
whichever reader made them: the running evaluator's board (`run`, `lag`, `check --lag-url`), whose windows can
see a stalled start offset, or `check`'s own single read, which cannot and so judges nothing (INFO, every group
UNKNOWN, its lag still shown). STALLED maps through `lag.check_statuses` as a consumer group's STALL does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_pulse.check.facts import NotAvailable, ProbeFailed
from kafka_pulse.check.judge.lag_verdicts import GroupVerdict, map_status
from kafka_pulse.check.judge.verdict import EXAMPLES, Section, Status
from pulse.config.lag import LagCheckStatusMap

if TYPE_CHECKING:
    from pulse.kafka.share_groups import ShareGroupsRead
    from pulse.kafka.share_stall import ShareGroupVerdict

ONE_READ = "one read (no window: a stalled start offset is judged by `run`, `lag` or `check --lag-url`)"
"""The source `check` names for its own read of the share groups."""
DETAILED = 20
"""Share groups listed in `details.share_groups`, the worst first."""
STALLED_NAMED = 3
"""Stalled partitions a reason line names per group."""


@dataclass(frozen=True)
class ShareFacts:
    """The share groups' verdicts of one cluster and where they came from."""

    source: str
    groups: tuple[ShareGroupVerdict, ...]
    windowed: bool
    """True when judged over a window of reads (a running evaluator): only then do the verdicts count."""
    reason: str = ""
    """Why the read is incomplete (or failed: then `groups` is empty); empty when every share group was read."""


def from_one_read(read: ShareGroupsRead) -> ShareFacts:
    """`check`'s own read, judged by the share-stall rule with no window: every partition UNKNOWN (a stall needs
    the start offset's history), its start offset and lag kept as read."""
    from pulse.kafka.share_stall import group_verdict, judge_partition

    verdicts = tuple(
        group_verdict(
            g, tuple(judge_partition(p.topic, p.partition, p.start_offset, p.lag, None, 0.0) for p in g.partitions)
        )
        for g in read.groups
    )
    return ShareFacts(ONE_READ, verdicts, windowed=False, reason=read.reason)


def check_status(verdict: ShareGroupVerdict, rules: Sequence[LagCheckStatusMap]) -> Status:
    """A share group's check status through `lag.check_statuses`: STALLED as a consumer group's STALL (default
    CRIT), OK as OK, UNKNOWN as UNKNOWN (never OK)."""
    from pulse.kafka.share_stall import ShareStatus

    as_group = {
        ShareStatus.STALLED: GroupVerdict(verdict.group, "ERR", "STALL"),
        ShareStatus.OK: GroupVerdict(verdict.group, "OK"),
        ShareStatus.UNKNOWN: GroupVerdict(verdict.group, "UNKNOWN"),
    }[verdict.status]
    return map_status(as_group, rules)


def _line(verdict: ShareGroupVerdict, status: Status) -> str:
    """One reason line naming the group, its status and its stalled partitions with their offsets."""
    head = f"share group {verdict.group} is {verdict.status.name}"
    if status is not Status.INFO:
        head += f" -> {status.value}"
    stalled = verdict.stalled[:STALLED_NAMED]
    if stalled:
        more = len(verdict.stalled) - len(stalled)
        return f"{head}: " + "; ".join(p.reason() for p in stalled) + (f"; and {more} more" if more > 0 else "")
    lag = "not known" if verdict.total_lag is None else str(verdict.total_lag)
    return f"{head}: {verdict.state}, {verdict.members} member(s), lag {lag}"


def _detail(verdict: ShareGroupVerdict, status: Status) -> dict[str, Any]:
    """The group's JSON (the share-group route's) with its check status, at most DETAILED partitions, the
    stalled ones first."""
    from pulse.kafka.share_stall import verdict_json

    out = verdict_json(verdict)
    parts = sorted(out["partitions"], key=lambda p: (p["status"] != "STALLED", p["status"] != "UNKNOWN"))
    return {**out, "partitions": parts[:DETAILED], "partition_count": len(parts), "check_status": status.value}


def add_share_groups(
    lag: Section, facts: ShareFacts | ProbeFailed | NotAvailable, rules: Sequence[LagCheckStatusMap]
) -> Section:
    """`lag` with the share groups added: lines for the groups not OK (worst first), `details.share_groups`, and,
    when the verdicts come from a window, the worst mapped status; a failed or incomplete read is UNKNOWN there
    (never OK). Share groups that are not read here (`lag.share_groups.enabled` off) leave `lag` as it is."""
    if isinstance(facts, NotAvailable):
        return lag
    from pulse.kafka.share_stall import ShareStatus  # share groups' modules only when they were read

    if isinstance(facts, ProbeFailed):
        facts = ShareFacts(ONE_READ, (), windowed=False, reason=facts.reason)
    judged = [(v, check_status(v, rules) if facts.windowed else Status.INFO) for v in facts.groups]
    judged.sort(key=lambda x: (-x[1].rank, -int(x[0].status), -(x[0].total_lag or 0), x[0].group))
    status = lag.status
    if facts.windowed:
        worst = [s for _, s in judged] + ([Status.UNKNOWN] if facts.reason else [])
        status = max([status, *worst], key=lambda s: s.rank)
    shown = [(v, s) for v, s in judged if v.status is not ShareStatus.OK or not facts.windowed]
    reasons = [*lag.reasons, f"share groups from {facts.source}"]
    reasons += [_line(v, s) for v, s in shown[:EXAMPLES]]
    if len(shown) > EXAMPLES:
        reasons.append(f"and {len(shown) - EXAMPLES} more share group(s)")
    if facts.reason:
        reasons.append(f"share groups: {facts.reason}")
    stalled = sum(1 for v, _ in judged if v.status is ShareStatus.STALLED)
    summary = f"{lag.summary}; {len(judged)} share group(s)" + (f", {stalled} STALLED" if stalled else "")
    details: dict[str, Any] = {
        **lag.details,
        "share_groups_source": facts.source,
        "share_groups_reason": facts.reason or None,
        "share_groups_judged": len(judged),
        "share_groups": [_detail(v, s) for v, s in judged[:DETAILED]],
    }
    return dataclasses.replace(lag, status=status, summary=summary, reasons=tuple(reasons), details=details)
