"""The reconciliation's rules on hand-computed tables (issue #26, point 3): producers' counts, the broker's written
and passed counts and the groups' counts of one minute -> the records that went astray, and where."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from audit.reconcile import (
    PRODUCERS,
    CountRow,
    Finding,
    Reconciler,
    broker_row,
    consumer_row,
    judge,
    producer_row,
    totals_of,
)

M = 1_800_000_000_000 - 1_800_000_000_000 % 60_000
"""Minute 0 (epoch ms); the tables count minutes from it."""


def minute(index: int) -> int:
    return M + index * 60_000


def sent(sent: int, acked: int, failed: int = 0, at: int = 0, topic: str = "orders") -> CountRow:
    return producer_row("prod", topic, minute(at), sent, acked, failed)


def done(group: str, processed: int, received: int | None = None, at: int = 0) -> CountRow:
    return consumer_row("prod", group, "orders", minute(at), processed if received is None else received, processed)


def log(group: str, written: int, passed: int | None = None, at: int = 0, topic: str = "orders") -> CountRow:
    passed = written if passed is None else passed
    return broker_row("prod", group, topic, minute(at), written, passed, passed == written)


def found(kind: str, count: int, group: str = PRODUCERS, at: int = 0, topic: str = "orders") -> Finding:
    return Finding(minute(at), "prod", topic, group, kind, count)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Case:
    rows: list[CountRow]
    want: list[Finding]
    counted: frozenset[str] = frozenset()


CASES = [
    pytest.param(
        Case([sent(100, 100), log("billing", 100), done("billing", 100), log("fraud", 100), done("fraud", 100)], []),
        id="everything-arrived-finds-nothing",
    ),
    pytest.param(
        Case([sent(60, 60), sent(40, 40), log("billing", 100), done("billing", 55), done("billing", 45)], []),
        id="a-minute-split-across-two-reports-of-each-side-adds-up",
    ),
    pytest.param(
        Case([sent(60, 60), sent(40, 30), log("billing", 90), done("billing", 90)], [found("unacknowledged", 10)]),
        id="the-second-report-of-a-split-minute-lacks-10-acknowledgements",
    ),
    pytest.param(
        Case([sent(10, 7, failed=3), log("billing", 7), done("billing", 7)], [found("unacknowledged", 3)]),
        id="failed-sends-are-sent-but-never-acknowledged",
    ),
    pytest.param(
        Case([sent(100, 100), log("billing", 90), done("billing", 90)], [found("missing", 10)]),
        id="acknowledged-but-truncated-from-the-log",
    ),
    pytest.param(
        Case(
            [sent(200, 200), log("billing", 200), done("billing", 100), log("fraud", 200), done("fraud", 200)],
            [found("skipped", 100, "billing")],
        ),
        id="a-seek-past-100-records-is-skipped-for-that-group-only",
    ),
    pytest.param(
        Case(
            [sent(100, 100), log("billing", 100), done("billing", 60, at=0), done("billing", 50, at=0)],
            [found("duplicated", 10, "billing")],
        ),
        id="a-restart-mid-minute-from-an-older-commit-processes-10-twice",
    ),
    pytest.param(
        Case([sent(100, 100), log("billing", 100), done("billing", 60), done("billing", 40)], []),
        id="a-clean-restart-mid-minute-adds-up-across-the-two-processes",
    ),
    pytest.param(
        Case(
            [sent(100, 100), log("billing", 100, passed=40), done("billing", 40)], [found("incomplete", 60, "billing")]
        ),
        id="a-minute-the-group-never-passed-is-incomplete-by-the-rest",
    ),
    pytest.param(
        Case([sent(100, 100), log("billing", 100), done("audit-app", 80)], [found("incomplete", 20, "audit-app")]),
        id="a-group-the-broker-does-not-watch-is-judged-by-its-counts",
    ),
    pytest.param(
        Case([sent(100, 100), log("billing", 100)], []),
        id="a-group-without-client-counts-is-judged-by-the-broker-alone",
    ),
    pytest.param(
        Case([sent(100, 100), log("billing", 100)], [found("skipped", 100, "billing")], frozenset({"billing"})),
        id="a-counted-group-that-reported-nothing-processed-nothing",
    ),
    pytest.param(
        Case([log("billing", 100), log("billing", 100), done("billing", 100)], []),
        id="a-broker-row-published-again-after-an-audit-restart-repeats-not-adds",
    ),
    pytest.param(
        Case(
            [sent(5, 5, topic="orders"), sent(5, 5, topic="refunds"), log("billing", 5, topic="orders")],
            [],
        ),
        id="a-topic-without-broker-rows-cannot-be-found-truncated",
    ),
    pytest.param(
        Case(
            [sent(3, 3, at=0), log("billing", 0, at=0), sent(4, 4, at=1), log("billing", 4, at=1)],
            [found("missing", 3)],
        ),
        id="minutes-are-judged-apart",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_judge(case: Case) -> None:
    assert judge(totals_of(case.rows), case.counted) == case.want


def test_a_report_counts_until_the_batch_that_judges_its_minute_later_ones_are_left_out() -> None:
    reconciler = Reconciler(deadline_ms=3 * 60_000)
    assert reconciler.batch([sent(100, 90), log("billing", 100), done("billing", 100)]) == []
    assert reconciler.batch([sent(1, 1, at=2), sent(0, 10)]) == []  # the 10 late acknowledgements of minute 0
    assert reconciler.batch([sent(1, 1, at=3)]) == []  # the watermark reaches minute 0: the next batch judges it
    assert reconciler.open_minutes() == 3
    # Judged now, with the late acknowledgements (without them: 10 unacknowledged) and this batch's 2 unanswered.
    assert reconciler.batch([sent(2, 0), sent(1, 1, at=4)]) == [found("unacknowledged", 2)]
    assert reconciler.late == 0
    # Minute 0 is judged: a report of it now is left out and counted, it changes no finding.
    assert reconciler.batch([sent(5, 0)]) == []
    assert reconciler.late == 1
    assert reconciler.open_minutes() == 3


def test_a_trigger_without_reports_judges_what_the_watermark_passed() -> None:
    reconciler = Reconciler(deadline_ms=60_000)
    assert reconciler.batch([sent(100, 100), log("billing", 100), done("billing", 70)]) == []
    assert reconciler.batch([sent(1, 1, at=1)]) == []
    assert reconciler.batch([]) == [found("skipped", 30, "billing")]  # minute 0, at the watermark


def test_a_consumer_report_past_the_deadline_leaves_its_records_looking_skipped() -> None:
    """Why the deadline must exceed the client's reporting interval (docs/audit.md, "Limits")."""
    reconciler = Reconciler(deadline_ms=60_000)
    assert reconciler.batch([sent(100, 100), log("billing", 100), done("billing", 70)]) == []
    assert reconciler.batch([done("billing", 0, at=1)]) == []
    assert reconciler.batch([done("billing", 0, at=2)]) == [found("skipped", 30, "billing")]
    assert reconciler.batch([done("billing", 30, at=0)]) == []
    assert reconciler.late == 1
