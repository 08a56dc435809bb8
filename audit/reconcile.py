"""The reconciliation's rules (pure; docs/audit.md, "Reconciliation"): the producers' counts, the broker's written and
passed counts and each group's consumed counts of one (cluster, topic, minute) summed, then compared, so records lost
between two of them surface as findings. `Reconciler` holds the open minutes between report batches and judges a
minute once the reports have moved `deadline` past it, as the Spark job's watermark does (audit/reconcile_sql.py
holds the same rules in Spark SQL; a test runs both on the same tables)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Literal

PRODUCERS = ""
"""The group key of the producers' totals (a consumer group is never named ``)."""

Kind = Literal["unacknowledged", "missing", "skipped", "duplicated", "incomplete"]

KINDS: tuple[Kind, ...] = ("unacknowledged", "missing", "skipped", "duplicated", "incomplete")
"""Every finding, in the order they are listed (docs/audit.md, "What each finding means")."""

SUMMED = ("sent", "acknowledged", "failed", "received", "processed")
"""Client counts are deltas: a minute's reports (split, or across restarts) add up."""
LARGEST = ("written", "passed", "complete")
"""Broker rows settle a minute once per audit process: a copy after an audit restart repeats, never adds."""


@dataclass(frozen=True, slots=True)
class CountRow:
    """One report about one (cluster, topic, minute), from one of the three sources; the columns it does not have
    are None. `group` is `PRODUCERS` for a producer's counts."""

    cluster: str
    topic: str
    minute_ms: int
    """Start of the minute of record timestamps (epoch ms)."""
    group: str
    sent: int | None = None
    acknowledged: int | None = None
    failed: int | None = None
    written: int | None = None
    passed: int | None = None
    complete: bool | None = None
    received: int | None = None
    processed: int | None = None


def producer_row(cluster: str, topic: str, minute_ms: int, sent: int, acknowledged: int, failed: int) -> CountRow:
    """An `audit-client` row of role `producer`."""
    return CountRow(cluster, topic, minute_ms, PRODUCERS, sent=sent, acknowledged=acknowledged, failed=failed)


def consumer_row(cluster: str, group: str, topic: str, minute_ms: int, received: int, processed: int) -> CountRow:
    """An `audit-client` row of role `consumer`."""
    return CountRow(cluster, topic, minute_ms, group, received=received, processed=processed)


def broker_row(
    cluster: str, group: str, topic: str, minute_ms: int, written: int, passed: int, complete: bool
) -> CountRow:
    """An `audit-broker` row (`records_written`, `records_passed`, `complete`)."""
    return CountRow(cluster, topic, minute_ms, group, written=written, passed=passed, complete=complete)


Key = tuple[str, str, int, str]
"""(cluster, topic, minute_ms, group)."""


def _merge(a: int | bool | None, b: int | bool | None, summed: bool) -> int | bool | None:
    if a is None or b is None:
        return b if a is None else a
    return a + b if summed else max(a, b)


def add_rows(totals: dict[Key, CountRow], rows: Iterable[CountRow]) -> None:
    """Fold report rows into per-key totals: client counts summed, broker counts the largest seen."""
    for row in rows:
        key = (row.cluster, row.topic, row.minute_ms, row.group)
        held = totals.get(key)
        if held is None:
            totals[key] = row
            continue
        merged = {n: _merge(getattr(held, n), getattr(row, n), True) for n in SUMMED}
        merged |= {n: _merge(getattr(held, n), getattr(row, n), False) for n in LARGEST}
        totals[key] = replace(held, **merged)  # type: ignore[arg-type]


def totals_of(rows: Iterable[CountRow]) -> dict[Key, CountRow]:
    totals: dict[Key, CountRow] = {}
    add_rows(totals, rows)
    return totals


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """Records of one (cluster, topic, minute) that went astray, and where (docs/audit.md, "What each finding
    means"). `group` is `PRODUCERS` for the producers' findings."""

    minute_ms: int
    cluster: str
    topic: str
    group: str
    kind: Kind
    count: int


def judge(totals: Mapping[Key, CountRow], counted_groups: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings of the given totals (whole minutes), sorted. A group in `counted_groups` reports client counts:
    where the broker has its row and the group reported nothing, it processed 0; any other group without client
    counts is judged by the broker's rows alone."""
    minutes: dict[tuple[str, str, int], list[CountRow]] = {}
    for (cluster, topic, minute, _group), row in totals.items():
        minutes.setdefault((cluster, topic, minute), []).append(row)
    found: list[Finding] = []
    for (cluster, topic, minute), rows in minutes.items():
        written = max((r.written for r in rows if r.written is not None), default=None)
        for row in rows:
            for kind, count in _counts(row, written, counted_groups):
                if count is not None and count > 0:
                    found.append(Finding(minute, cluster, topic, row.group, kind, count))
    return sorted(found)


def _counts(row: CountRow, written: int | None, counted_groups: frozenset[str]) -> list[tuple[Kind, int | None]]:
    """One key's candidate findings (kept when positive); `written` is the minute's, from any group's broker row."""
    if row.group == PRODUCERS:
        sent, acked = row.sent, row.acknowledged
        return [
            ("unacknowledged", None if sent is None or acked is None else sent - acked),
            ("missing", None if acked is None or written is None else acked - written),
        ]
    processed = row.processed
    if processed is None and row.group in counted_groups and row.written is not None:
        processed = 0
    if row.written is not None and row.passed is not None:
        behind = None if row.complete is not False else row.written - row.passed
    else:
        behind = None if written is None or processed is None else written - processed
    return [
        ("skipped", None if row.passed is None or processed is None else row.passed - processed),
        ("duplicated", None if written is None or processed is None else processed - written),
        ("incomplete", behind),
    ]


def describe(finding: Finding) -> str:
    """One line naming topic, group, minute and count (the status page's, the CLI's)."""
    minute = datetime.fromtimestamp(finding.minute_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%MZ")
    who = "producers" if finding.group == PRODUCERS else f"group {finding.group}"
    return f"{finding.count} records {finding.kind} on {finding.cluster}/{finding.topic}, {who}, minute {minute}"


class Reconciler:
    """The open minutes between report batches, judged as the streaming job's micro-batches judge them (Spark's
    watermark on `minute`): a batch judges every minute at or below the watermark reached by the batches before it,
    its own rows of those minutes included; a row of a minute judged by an earlier batch is late (left out,
    counted). The watermark is the newest minute seen minus `deadline_ms`. `batch([])` is a trigger without data."""

    def __init__(self, deadline_ms: int, counted_groups: frozenset[str] = frozenset()) -> None:
        self.deadline_ms = deadline_ms
        self.counted_groups = counted_groups
        self.judged_up_to_ms = 0
        """The minutes at or below it are judged (Spark's watermark starts at the epoch)."""
        self.watermark_ms = 0
        """What the next batch judges up to."""
        self.late = 0
        """Rows left out because their minute had been judged."""
        self._open: dict[Key, CountRow] = {}

    def batch(self, rows: Iterable[CountRow]) -> list[Finding]:
        """Fold one batch of reports in; the findings of the minutes it judged."""
        taken = []
        for row in rows:
            if row.minute_ms <= self.judged_up_to_ms:
                self.late += 1
            else:
                taken.append(row)
        add_rows(self._open, taken)
        closed = {k: v for k, v in self._open.items() if k[2] <= self.watermark_ms}
        for key in closed:
            del self._open[key]
        self.judged_up_to_ms = self.watermark_ms
        if taken:
            self.watermark_ms = max(self.watermark_ms, max(r.minute_ms for r in taken) - self.deadline_ms)
        return judge(closed, self.counted_groups)

    def open_minutes(self) -> int:
        return len({k[:3] for k in self._open})


COUNT_COLUMNS = tuple(f.name for f in fields(CountRow))[4:]
"""The count columns, in the order of `CountRow` (the streaming job's rows carry the same)."""
