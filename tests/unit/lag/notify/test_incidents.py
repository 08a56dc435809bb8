"""Incidents per group: opened when a group reaches the configured severity, closed when it is
OK again; UNKNOWN never opens or closes one (a cluster outage is not a verdict). Each row is a sequence of (time s,
group status, transitions expected) after Burrow's notifier model; delivery goes through `pulse.alerts`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from lag.notify.incidents import ALERTNAME, IncidentBook, LagNotifier, LagNotifierCollector, book_statuses
from lag.protocol import GroupStatus, PartitionVerdict, Status
from lag.service import LagService
from pulse.alerts import Alert, Incidents, SendResult
from pulse.config import LagConfig


def status(s: Status, group: str = "g", totallag: int = 0, reason: str = "") -> GroupStatus:
    part = PartitionVerdict("t", 0, Status.OK, None, None, totallag, 1.0)
    return GroupStatus("c", group, s, 1.0, (part,), 1, part, totallag, reason=reason or f"because {s.name}")


@dataclass(frozen=True)
class Case:
    threshold: Status
    steps: tuple[tuple[Status, tuple[str, ...], tuple[str, ...]], ...]
    """(status, transitions 'kind SEVERITY', severities of the firing alerts after the step)."""


OK, WARN, ERR, UNKNOWN, NOTFOUND = Status.OK, Status.WARN, Status.ERR, Status.UNKNOWN, Status.NOTFOUND
CASES = [
    pytest.param(Case(ERR, ((OK, (), ()), (OK, (), ()))), id="healthy: nothing"),
    pytest.param(Case(ERR, ((WARN, (), ()), (OK, (), ()))), id="below-threshold: no incident"),
    pytest.param(
        Case(ERR, ((ERR, ("open ERR",), ("page",)), (ERR, (), ("page",)), (OK, ("close ERR",), ()))),
        id="open-then-close",
    ),
    pytest.param(
        Case(WARN, ((WARN, ("open WARN",), ("ticket",)), (ERR, ("severity ERR",), ("page",)))),
        id="worse: the severity label follows, a new alert identity",
    ),
    pytest.param(
        Case(
            ERR,
            ((ERR, ("open ERR",), ("page",)), (WARN, ("severity WARN",), ("ticket",)), (OK, ("close WARN",), ())),
        ),
        id="better-but-not-ok: the incident lasts until OK, as Burrow's",
    ),
    pytest.param(Case(ERR, ((UNKNOWN, (), ()), (UNKNOWN, (), ()))), id="unknown-never-opens: an outage is no verdict"),
    pytest.param(
        Case(
            ERR,
            (
                (ERR, ("open ERR",), ("page",)),
                (UNKNOWN, (), ("page",)),
                (ERR, (), ("page",)),
                (OK, ("close ERR",), ()),
            ),
        ),
        id="unknown-never-closes: still firing through the outage",
    ),
    pytest.param(Case(ERR, ((ERR, ("open ERR",), ("page",)), (NOTFOUND, ("close ERR",), ()))), id="deleted"),
]


@pytest.mark.parametrize("case", CASES)
def test_incidents(case: Case) -> None:
    book = IncidentBook(case.threshold)
    for at, (s, transitions, firing) in enumerate(case.steps):
        got = [f"{t.kind} {t.severity.name}" for t in book.update([status(s)], at * 10_000)]
        assert got == list(transitions), f"step {at}: {s.name}"
        assert [a.labels["severity"] for a in book.firing()] == list(firing), f"step {at}: {s.name}"


def test_an_incident_keeps_its_id_and_start_until_it_closes() -> None:
    ids = iter(["first", "second"])
    book = IncidentBook(Status.WARN, new_id=lambda: next(ids))
    book.update([status(WARN)], 1000)
    book.update([status(ERR)], 5000)
    (alert,) = book.firing()
    assert alert.annotations["incident_id"] == "first"
    assert alert.starts_at == datetime.fromtimestamp(1, tz=UTC)
    book.update([status(OK)], 9000)
    book.update([status(ERR)], 20_000)
    assert [a.annotations["incident_id"] for a in book.firing()] == ["second"]


def test_a_group_that_vanishes_is_closed() -> None:
    book = IncidentBook(Status.ERR)
    book.update([status(ERR, "a"), status(ERR, "b")], 0)
    assert [(t.kind, t.group) for t in book.update([status(ERR, "a")], 1000)] == [("close", "b")]


def test_labels_carry_identity_and_annotations_the_numbers() -> None:
    book = IncidentBook(
        Status.ERR,
        api_url="http://127.0.0.1:8000",
        routing_labels={"team": "kafka"},
        runbook_template="https://runbooks/{alertname}#{group}",
    )
    book.update([status(ERR, totallag=1234)], 0)
    book.update([status(UNKNOWN, reason="cluster c: no HWM refresh for 42 s")], 1000)
    (alert,) = book.firing()
    assert dict(alert.labels) == {"team": "kafka", "alertname": ALERTNAME, "severity": "page", "cluster": "c",
                                  "group": "g"}  # fmt: skip
    assert alert.annotations["totallag"] == "1234" and alert.annotations["maxlag"] == "t[0] 1234"
    assert alert.annotations["lag_url"] == "http://127.0.0.1:8000/v3/kafka/c/consumer/g/lag"
    assert alert.annotations["runbook_url"] == f"https://runbooks/{ALERTNAME}#g"
    assert alert.annotations["note"] == "status unknown now (cluster c: no HWM refresh for 42 s); last known ERR"


def test_threshold_must_be_warn_or_err() -> None:
    with pytest.raises(ValueError, match="threshold must be WARN or ERR, got OK"):
        IncidentBook(Status.OK)


class RecordingSender:
    def __init__(self) -> None:
        self.batches: list[list[Alert]] = []

    def send(self, alerts: Any) -> SendResult:
        self.batches.append(list(alerts))
        return SendResult(len(alerts), 0)


def test_the_notifier_resolves_through_incidents() -> None:
    """A stopped group fires, then resolves with endsAt = now once it is OK; the firing one carries a future
    endsAt (keep-alive), so Alertmanager does not time it out between cycles."""
    now = [1_700_000_000_000]
    service = LagService(LagConfig(mode="burrow", intervals=2), clock_ms=lambda: now[0])
    with service.locked() as store:
        store.add_hwm("c", "t", 0, 100, now[0] - 60_000)
        store.add_commit("c", "g", "t", 0, 10, now[0] - 60_000, now[0] - 60_000)
        store.add_commit("c", "g", "t", 0, 20, now[0] - 50_000, now[0] - 50_000)
    sender = RecordingSender()
    notifier = LagNotifier(service, IncidentBook(Status.ERR), Incidents(resend_interval_s=30), sender, 30)
    assert [t.kind for t in notifier.run_once()] == ["open"]
    firing = sender.batches[-1][0]
    assert firing.labels["severity"] == "page" and firing.ends_at is not None
    assert firing.ends_at > datetime.fromtimestamp(now[0] / 1000, tz=UTC)
    now[0] += 10_000
    with service.locked() as store:  # the consumer is back and caught up
        store.add_commit("c", "g", "t", 0, 100, now[0], now[0])
    assert [t.kind for t in notifier.run_once()] == ["close"]
    resolved = sender.batches[-1][0]
    assert resolved.ends_at == datetime.fromtimestamp(now[0] / 1000, tz=UTC)


class FailingSender:
    """A sink that fails like one whose spool raised before any POST (the failure the notifier must outlive)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.batches: list[list[Alert]] = []

    def send(self, alerts: Any) -> SendResult:
        if self.failures:
            self.failures -= 1
            raise OSError(30, "Read-only file system")
        self.batches.append(list(alerts))
        return SendResult(len(alerts), 0)


def test_a_failing_cycle_is_counted_and_the_next_one_delivers() -> None:
    registry = CollectorRegistry()
    sender = FailingSender(failures=2)
    notifier = LagNotifier(LagService(LagConfig()), IncidentBook(Status.ERR), Incidents(30), sender, 30)
    registry.register(LagNotifierCollector(notifier))
    notifier.run_once()
    notifier.run_once()
    assert registry.get_sample_value("kafka_pulse_lag_notifier_failures_total") == 2
    assert registry.get_sample_value("kafka_pulse_lag_notifier_last_success_timestamp_seconds") is None

    notifier.run_once()
    assert sender.batches == [[]]  # the third cycle went out
    assert registry.get_sample_value("kafka_pulse_lag_notifier_last_success_timestamp_seconds") is not None


def test_book_statuses_are_all_statuses_with_objects_only_for_unsettled_groups() -> None:
    """The notifier builds objects only for groups not OK or NOTFOUND (issue 27); every group keeps its status and
    order, and the others are exactly `all_statuses`' objects."""
    now = 1_700_000_000_000
    config = LagConfig(mode="burrow", intervals=2, expire_group_s=600)
    services = [LagService(config, clock_ms=lambda: now) for _ in range(2)]  # a read purges expired groups
    for service in services:
        with service.locked() as store:
            for c in ("a", "b"):
                store.add_hwm(c, "t", 0, 100, now - 60_000)
                store.add_hwm(c, "t", 1, 100, now - 60_000)
                store.add_commit(c, "stopped", "t", 0, 10, now - 60_000, now - 60_000)
                store.add_commit(c, "stopped", "t", 0, 20, now - 50_000, now - 50_000)
                store.add_commit(c, "ok", "t", 0, 100, now - 2_000, now - 2_000)
                store.add_commit(c, "ok", "t", 1, 100, now - 1_000, now - 1_000)
                store.add_commit(c, "gone", "t", 1, 50, now - 500_000, now - 500_000)
    full = services[0].all_statuses(now + 200_000)  # "gone" expired by then
    lean = book_statuses(services[1], now + 200_000)
    assert [(s.cluster, s.group, s.status) for s in lean] == [(s.cluster, s.group, s.status) for s in full]
    assert {s.status for s in full} >= {Status.OK, Status.ERR, Status.NOTFOUND}
    for got, want in zip(lean, full, strict=True):
        if want.status not in (Status.OK, Status.NOTFOUND):
            assert got == want
        else:
            assert got.partitions == () and got.reason == ""
