"""Incidents per group (issue #5 Build 5): opened when a group reaches the configured severity, re-sent while it
lasts, resolved when it is OK again; UNKNOWN never opens or closes one (a cluster outage is not a verdict).
Each row is a sequence of (time s, group status) and the alerts expected after each step."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lag.notify import ALERTNAME, IncidentBook, LagAlert, alertmanager_json
from lag.status import GroupStatus, PartitionVerdict, Status


def status(s: Status, group: str = "g", totallag: int = 0) -> GroupStatus:
    part = PartitionVerdict("t", 0, Status.OK, None, None, totallag, 1.0)
    return GroupStatus("c", group, s, 1.0, (part,), 1, part, totallag, reason=f"because {s.name}")


def summary(alerts: list[LagAlert]) -> list[str]:
    """'fire warning' / 'resolve critical' per alert, in order."""
    return [f"{'fire' if a.firing else 'resolve'} {a.labels['severity']}" for a in alerts]


@dataclass(frozen=True)
class Case:
    threshold: Status
    steps: tuple[tuple[int, Status, tuple[str, ...]], ...]
    """(time s, status, expected alerts of this step)."""


OK, WARN, ERR, UNKNOWN, NOTFOUND = Status.OK, Status.WARN, Status.ERR, Status.UNKNOWN, Status.NOTFOUND
CASES = [
    pytest.param(Case(ERR, ((0, OK, ()), (10, OK, ()))), id="healthy: nothing"),
    pytest.param(Case(ERR, ((0, WARN, ()), (10, OK, ()))), id="below-threshold: no incident"),
    pytest.param(
        Case(ERR, ((0, ERR, ("fire critical",)), (10, ERR, ()), (20, OK, ("resolve critical",)), (30, OK, ()))),
        id="open-then-close",
    ),
    pytest.param(
        Case(WARN, ((0, WARN, ("fire warning",)), (30, WARN, ()), (60, WARN, ("fire warning",)))),
        id="resend-every-60s: Alertmanager must not time it out",
    ),
    pytest.param(
        Case(WARN, ((0, WARN, ("fire warning",)), (10, ERR, ("resolve warning", "fire critical")))),
        id="worse: severity label is identity, so old resolved and new fired",
    ),
    pytest.param(
        Case(
            ERR,
            (
                (0, ERR, ("fire critical",)),
                (10, WARN, ("resolve critical", "fire warning")),
                (20, OK, ("resolve warning",)),
            ),
        ),
        id="better-but-not-ok: incident lasts until OK, as Burrow's",
    ),
    pytest.param(
        Case(ERR, ((0, UNKNOWN, ()), (10, UNKNOWN, ()))), id="unknown-never-opens: an outage is not a verdict"
    ),
    pytest.param(
        Case(
            ERR,
            (
                (0, ERR, ("fire critical",)),
                (10, UNKNOWN, ()),
                (60, UNKNOWN, ("fire critical",)),
                (70, ERR, ()),
                (80, OK, ("resolve critical",)),
            ),
        ),
        id="unknown-never-closes: still firing through the outage",
    ),
    pytest.param(
        Case(ERR, ((0, ERR, ("fire critical",)), (10, NOTFOUND, ("resolve critical",)))),
        id="group-deleted: resolved",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_incidents(case: Case) -> None:
    book = IncidentBook(case.threshold, resend_s=60)
    for at_s, s, want in case.steps:
        got = summary(book.update([status(s)], at_s * 1000))
        assert got == list(want), f"at {at_s} s, {s.name}"


def test_an_incident_keeps_its_id_and_start_until_it_closes() -> None:
    ids = iter(["first", "second"])
    book = IncidentBook(Status.WARN, resend_s=60, new_id=lambda: next(ids))
    opened = book.update([status(WARN)], 1000)[0]
    changed = book.update([status(ERR)], 5000)
    closed = book.update([status(OK)], 9000)[0]
    again = book.update([status(ERR)], 20_000)[0]
    assert {a.annotations["incident_id"] for a in [opened, *changed, closed]} == {"first"}
    assert changed[1].starts_at_ms == 1000 and closed.ends_at_ms == 9000
    assert again.annotations["incident_id"] == "second" and again.starts_at_ms == 20_000


def test_a_group_that_vanishes_is_resolved() -> None:
    book = IncidentBook(Status.ERR)
    book.update([status(ERR, "a"), status(ERR, "b")], 0)
    alerts = book.update([status(ERR, "a")], 1000)
    assert [(a.labels["group"], a.firing) for a in alerts] == [("b", False)]
    assert alerts[0].annotations["note"] == "group no longer tracked"


def test_labels_carry_identity_and_annotations_the_numbers() -> None:
    book = IncidentBook(Status.ERR, api_url="http://127.0.0.1:8000")
    alert = book.update([status(ERR, totallag=1234)], 1_700_000_000_000)[0]
    assert dict(alert.labels) == {"alertname": ALERTNAME, "severity": "critical", "cluster": "c", "group": "g"}
    assert alert.annotations["totallag"] == "1234"
    assert alert.annotations["maxlag"] == "t[0] 1234"
    assert alert.annotations["lag_url"] == "http://127.0.0.1:8000/v3/kafka/c/consumer/g/lag"
    body = alertmanager_json(alert)
    assert body["startsAt"] == "2023-11-14T22:13:20.000Z" and "endsAt" not in body
    resolved = alertmanager_json(book.update([status(OK)], 1_700_000_060_000)[0])
    assert resolved["endsAt"] == "2023-11-14T22:14:20.000Z"


def test_threshold_must_be_warn_or_err() -> None:
    with pytest.raises(ValueError, match="threshold must be WARN or ERR, got OK"):
        IncidentBook(Status.OK)
