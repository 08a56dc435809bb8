"""The broker-side audit's arithmetic on hand-computed tables (issue #26, point 1): boundary offsets and commit
observations -> records written and passed, completeness and latency per (group, topic, minute)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from audit.minutes import MINUTE_MS, MinuteAudit, MinuteBook, due_boundaries, minute_of

M = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS
"""A minute start (epoch ms); the tables count minutes from it."""
WAIT_MS = 5 * MINUTE_MS


def at(minutes: float) -> int:
    return M + int(minutes * MINUTE_MS)


@dataclass(frozen=True)
class Case:
    bounds: dict[int, dict[int, int]]
    """minute index -> partition -> offset of the first record at or after that minute's start."""
    commits: list[tuple[float, dict[int, int]]]
    """(observed at, in minutes from M) -> partition -> committed offset, for group `g`."""
    now: float
    want: list[tuple[int, int, int, float | None, float, float | None]]
    """(minute index, written, passed, passed at in minutes or None, completeness, latency_s)."""
    groups: tuple[str, ...] = field(default=("g",))


CASES = [
    pytest.param(
        Case({0: {0: 0}, 1: {0: 10}}, [(1.5, {0: 10})], now=2, want=[(0, 10, 10, 1.5, 1.0, 30.0)]),
        id="passed-30s-after-the-minute",
    ),
    pytest.param(
        Case(
            {0: {0: 0, 1: 100}, 1: {0: 10, 1: 105}},
            [(1.2, {0: 10, 1: 103}), (1.6, {0: 10, 1: 105})],
            now=2,
            want=[(0, 15, 15, 1.6, 1.0, 36.0)],
        ),
        id="the-slowest-partition-decides-the-moment",
    ),
    pytest.param(
        Case({0: {0: 0}, 1: {0: 10}}, [(1.5, {0: 4})], now=3, want=[]),
        id="behind-within-max-wait-settles-nothing",
    ),
    pytest.param(
        Case({0: {0: 0}, 1: {0: 10}}, [(1.5, {0: 4}), (6.5, {0: 4})], now=6.5, want=[(0, 10, 4, None, 0.4, None)]),
        id="behind-past-max-wait-settles-incomplete",
    ),
    pytest.param(
        Case({0: {0: 0}, 1: {0: 10}}, [], now=7, want=[(0, 10, 0, None, 0.0, None)]),
        id="a-group-that-never-committed-passed-nothing",
    ),
    pytest.param(
        Case(
            {0: {0: 5}, 1: {0: 5}, 2: {0: 9}},
            [(2.25, {0: 9})],
            now=3,
            want=[(0, 0, 0, 2.25, 1.0, 75.0), (1, 4, 4, 2.25, 1.0, 15.0)],
        ),
        id="an-empty-minute-is-complete-and-passed-with-the-next",
    ),
    pytest.param(
        Case({0: {0: 0, 1: 0}, 1: {0: 6, 1: 0}}, [(1.1, {0: 6})], now=2, want=[(0, 6, 6, 1.1, 1.0, 6.0)]),
        id="a-partition-never-written-owes-no-commit",
    ),
    pytest.param(
        Case({0: {0: 0}, 1: {0: 10}}, [(1.5, {0: 12}), (1.7, {0: 3})], now=2, want=[(0, 10, 10, 1.5, 1.0, 30.0)]),
        id="a-reset-after-passing-does-not-undo-the-pass",
    ),
    pytest.param(
        Case({0: {0: 0}, 1: {0: 10}}, [(0.5, {0: 10})], now=2, want=[(0, 10, 10, 1.0, 1.0, 0.0)]),
        id="a-commit-before-the-minute-end-skewed-timestamps-is-latency-0",
    ),
    pytest.param(
        Case(
            {0: {0: 0}, 1: {0: 10, 1: 0}, 2: {0: 20, 1: 7}},
            [(2.5, {0: 20, 1: 7})],
            now=3,
            want=[(0, 10, 10, 2.5, 1.0, 90.0), (1, 17, 17, 2.5, 1.0, 30.0)],
        ),
        id="a-partition-added-mid-way-counts-from-its-first-boundary",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_minutes_settle_as_computed_by_hand(case: Case) -> None:
    book = MinuteBook(case.groups, WAIT_MS)
    for index, offsets in sorted(case.bounds.items()):
        book.record_boundary("t", at(index), offsets)
    for seen, committed in case.commits:
        book.observe_commits("g", {("t", p): o for p, o in committed.items()}, at(seen))
    got = [
        (
            (a.minute_ms - M) // MINUTE_MS,
            a.written,
            a.passed,
            None if a.passed_at_ms is None else (a.passed_at_ms - M) / MINUTE_MS,
            a.completeness,
            a.latency_s,
        )
        for a in book.settle(at(case.now))
    ]
    assert got == case.want  # completeness is a ratio of small integers: exact


def test_a_minute_settles_once_and_the_rest_wait_in_order() -> None:
    book = MinuteBook(["g"], WAIT_MS)
    for index, offset in enumerate((0, 10, 20, 30)):
        book.record_boundary("t", at(index), {0: offset})
    book.observe_commits("g", {("t", 0): 20}, at(2.5))
    first = book.settle(at(2.5))
    assert [(a.minute_ms, a.written) for a in first] == [(at(0), 10), (at(1), 10)]
    assert book.settle(at(2.6)) == []  # minute 2 not passed, within max_wait; 0 and 1 never again
    book.observe_commits("g", {("t", 0): 30}, at(3.5))
    assert book.settle(at(3.5)) == [MinuteAudit("g", "t", at(2), 10, 10, at(3.5))]


def test_each_group_settles_on_its_own() -> None:
    book = MinuteBook(["fast", "slow"], WAIT_MS)
    book.record_boundary("t", at(0), {0: 0})
    book.record_boundary("t", at(1), {0: 8})
    book.observe_commits("fast", {("t", 0): 8}, at(1.25))
    book.observe_commits("slow", {("t", 0): 2}, at(1.25))
    assert [(a.group, a.passed) for a in book.settle(at(1.25))] == [("fast", 8)]
    late = book.settle(at(6))
    assert [(a.group, a.written, a.passed, a.passed_at_ms) for a in late] == [("slow", 8, 2, None)]


@pytest.mark.parametrize(
    ("read_up_to", "now", "since", "want"),
    [
        pytest.param(None, 3.1, None, [2], id="the-boundary-passed-6s-ago-waits-out-the-grace"),
        pytest.param(None, 3.5, None, [3], id="first-read-is-the-newest-due-boundary"),
        pytest.param(None, 3.5, 0.5, [0, 1, 2, 3], id="since-reads-back-from-its-minute"),
        pytest.param(1, 3.5, 0.5, [2, 3], id="then-each-boundary-after-the-last-read"),
        pytest.param(3, 3.9, None, [], id="nothing-new"),
    ],
)
def test_due_boundaries(read_up_to: int | None, now: float, since: float | None, want: list[int]) -> None:
    grace_ms = 10_000
    got = due_boundaries(
        None if read_up_to is None else at(read_up_to), at(now), grace_ms, None if since is None else at(since)
    )
    assert got == [at(i) for i in want]


def test_minute_of_rounds_down_to_the_utc_minute() -> None:
    assert minute_of(at(2) + 59_999) == at(2)
    assert minute_of(at(2)) == at(2)


def test_commit_history_stays_bounded_while_the_group_keeps_up() -> None:
    """A group committing every 15 s for an hour: the book keeps the observations of the unsettled minute only,
    not an hour's worth (memory at 10,000 partitions; docs/audit.md, "Cost and scale")."""
    book = MinuteBook(["g"], WAIT_MS)
    book.record_boundary("t", at(0), {0: 0})
    held: list[int] = []
    for cycle in range(1, 240):
        now = at(cycle / 4)
        if cycle % 4 == 0:
            book.record_boundary("t", now, {0: cycle * 10})
        book.observe_commits("g", {("t", 0): cycle * 10}, now)
        book.observe_commits("g", {("t", 0): cycle * 10}, now + 1)  # unchanged: no new observation
        assert all(a.passed_at_ms == a.minute_ms + MINUTE_MS for a in book.settle(now))
        held.append(book.observations())
    assert max(held) <= 5  # one minute of 15-second commits, plus the newest
