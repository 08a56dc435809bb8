"""The lag section judged from a running evaluator's group verdicts (pure): each group's lag status mapped to a
check status by `lag.check_statuses`, the worst of them the section's.

A single snapshot cannot judge a group (verdict.py's `judge_lag`); the evaluator's windows of commits can, so
inside `run` and `lag`, and for `check --lag-url`, its verdicts make the section and the overall status.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_pulse.check.facts import NotAvailable, ProbeFailed
from kafka_pulse.check.judge.verdict import EXAMPLES, Section, Status
from pulse.config.lag import LagCheckStatusMap

if TYPE_CHECKING:
    from lag import GroupStatus

DEFAULT_MAP: dict[str, Status] = {
    "OK": Status.OK,
    "WARN": Status.WARN,
    "ERR": Status.CRIT,
    "STOP": Status.CRIT,
    "STALL": Status.CRIT,
    "REWIND": Status.CRIT,
    "NOTFOUND": Status.UNKNOWN,
    "UNKNOWN": Status.UNKNOWN,
}
"""Lag status -> check status without an override: a stopped, stalled or rewound consumer is CRIT (Burrow's ERR),
a growing lag WARN, a group the evaluator cannot judge UNKNOWN, never OK."""
PARTITION_ERRORS = ("STOP", "STALL", "REWIND")
"""The partition statuses Burrow folds into a group's ERR; the mapping looks at the worst of them."""


@dataclass(frozen=True)
class GroupVerdict:
    """One group as the evaluator judged it."""

    group: str
    status: str
    """The group's Burrow status: OK, WARN, ERR, NOTFOUND (or our UNKNOWN)."""
    worst_partition: str | None = None
    """For ERR: STOP, STALL or REWIND, the worst partition's status; None when not known."""
    totallag: int = 0
    reason: str = ""

    @property
    def lag_status(self) -> str:
        """`ERR (STOP)` and the like: what the reasons print."""
        return f"{self.status} ({self.worst_partition})" if self.worst_partition else self.status


@dataclass(frozen=True)
class LagVerdicts:
    """Every group of one cluster with the evaluator's verdict, and where they came from."""

    source: str
    """`http://host:port` of a listener, or `this process`."""
    groups: tuple[GroupVerdict, ...]
    unread: tuple[str, ...] = ()
    """Groups listed whose status was not read before the deadline."""


def source_line(source: str) -> str:
    """The line the section prints first, so the report says which kind of lag it judged."""
    return f"lag verdicts from {source} (running evaluator)"


def map_status(verdict: GroupVerdict, rules: Sequence[LagCheckStatusMap]) -> Status:
    """The check status of `verdict`: the first rule whose pattern matches the whole group name overrides the
    default; STOP, STALL and REWIND fall back to the rule's `err`, then to the default."""
    rule = next((r for r in rules if re.fullmatch(r.pattern, verdict.group)), None)
    keys = [verdict.status]
    if verdict.status == "ERR" and verdict.worst_partition in PARTITION_ERRORS:
        keys = [verdict.worst_partition, "ERR"]
    if rule is not None:
        for key in keys:
            chosen = getattr(rule, key.lower(), None)
            if chosen is not None:
                return Status(chosen)
    return DEFAULT_MAP.get(keys[0], Status.UNKNOWN)


def worst_partition(statuses: Iterable[str]) -> str | None:
    """The worst of STOP < STALL < REWIND among `statuses` (lag's severity order), None when none is."""
    found = [s for s in statuses if s in PARTITION_ERRORS]
    return max(found, key=PARTITION_ERRORS.index) if found else None


def from_group_statuses(source: str, cluster: str, statuses: Iterable[GroupStatus]) -> LagVerdicts:
    """The in-process evaluator's verdicts for `cluster` (read through the `LagReader`)."""
    groups = tuple(
        GroupVerdict(
            group=s.group,
            status=s.status.name,
            worst_partition=worst_partition(p.status.name for p in s.partitions) if s.status.name == "ERR" else None,
            totallag=s.totallag,
            reason=s.reason,
        )
        for s in statuses
        if s.cluster == cluster
    )
    return LagVerdicts(source, groups)


def judge_lag_verdicts(
    facts: LagVerdicts | ProbeFailed | NotAvailable, rules: Sequence[LagCheckStatusMap], source: str
) -> Section:
    """The worst mapped status of the cluster's groups; a listener that does not answer is UNKNOWN with the
    reason, never OK, as are groups whose status was not read in time."""
    first = source_line(source)
    if not isinstance(facts, LagVerdicts):
        return Section(
            "lag",
            Status.UNKNOWN,
            "group verdicts not read",
            (first, facts.reason),
            details={"source": first, "groups": []},
        )
    judged = [(g, map_status(g, rules)) for g in sorted(facts.groups, key=lambda g: g.group)]
    bad = sorted((x for x in judged if x[1] is not Status.OK), key=lambda x: (-x[1].rank, x[0].group))
    status = max((s for _, s in judged), key=lambda s: s.rank, default=Status.OK)
    reasons = [first]
    reasons += [
        f"group {g.group} is {g.lag_status} -> {s.value}" + (f": {g.reason}" if g.reason else "")
        for g, s in bad[:EXAMPLES]
    ]
    if len(bad) > EXAMPLES:
        reasons.append(f"and {len(bad) - EXAMPLES} more group(s) not OK")
    if facts.unread:
        status = max(status, Status.UNKNOWN, key=lambda s: s.rank)
        reasons.append(f"{len(facts.unread)} group(s) not read in time: {', '.join(facts.unread[:EXAMPLES])}")
    counts: dict[str, int] = {}
    for _, s in judged:
        counts[s.value] = counts.get(s.value, 0) + 1
    summary = f"{len(judged)} group(s) judged by the evaluator"
    if bad:
        summary += "; " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()) if k != "OK")
        summary += f"; worst: {bad[0][0].group} ({bad[0][0].lag_status})"
    details: dict[str, Any] = {
        "source": first,
        "groups": [
            {
                "group": g.group,
                "lag_status": g.status,
                "worst_partition": g.worst_partition,
                "status": s.value,
                "totallag": g.totallag,
                "reason": g.reason,
            }
            for g, s in bad[:20]
        ],
        "groups_judged": len(judged),
        "unread": list(facts.unread),
    }
    return Section("lag", status, summary, tuple(reasons), details=details)
