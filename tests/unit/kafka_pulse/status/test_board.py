"""The board's refresh without Kafka (the check is injected): one check per cluster makes the verdict, a check
that raises or does not finish is UNKNOWN with the reason (never OK, never dropped), and reading the document runs
no check."""

from __future__ import annotations

import dataclasses
import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.judge.verdict import Report, Section, Status
from kafka_pulse.status import board as board_module
from kafka_pulse.status.board import StatusBoard, StatusSources, every_cluster
from kafka_pulse.status.document import StatusInputs, status_document
from pulse.config import ClusterConfig, PulseConfig

AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def sources() -> StatusSources:
    clusters = [ClusterConfig(name=n, bootstrap_servers=["127.0.0.1:9092"]) for n in ("east", "west")]
    return StatusSources(PulseConfig(), clusters, off={"lag": "lag.enabled is false"})


def test_each_cluster_is_checked_and_the_worst_wins() -> None:
    asked: list[str] = []

    def check(config: PulseConfig, cluster: ClusterConfig, deadline: Deadline) -> tuple[Section, ...]:
        asked.append(cluster.name)
        assert 0 < deadline.remaining() <= 4.0
        status = Status.WARN if cluster.name == "west" else Status.OK
        return (Section("brokers", status, f"{cluster.name} brokers"),)

    board = StatusBoard(sources(), check=check, clock=lambda: AT)
    assert board.document()["status"] == "UNKNOWN"  # before the first refresh
    board.refresh()
    doc = board.document()
    board.document()
    assert sorted(asked) == ["east", "west"]  # reading the document twice checked nothing more
    assert doc["status"] == "WARN"
    assert [c["cluster"] for c in doc["clusters"]] == ["east", "west"]
    assert (doc["groups"], doc["slos"], doc["off"]) == (None, None, {"lag": "lag.enabled is false"})


def test_a_failing_check_is_unknown_with_its_error() -> None:
    def check(config: PulseConfig, cluster: ClusterConfig, deadline: Deadline) -> tuple[Section, ...]:
        raise RuntimeError("librdkafka exploded")

    board = StatusBoard(sources(), check=check, clock=lambda: AT)
    board.refresh()
    doc = board.document()
    assert doc["status"] == "UNKNOWN"
    (section,) = doc["clusters"][0]["checks"]
    assert section["reasons"] == ["RuntimeError: librdkafka exploded"]


def test_each_new_evaluation_becomes_a_burn_down_point() -> None:
    from datetime import timedelta

    from kafka_pulse.runner.slo_schedule import SloSchedule
    from pulse.config import SloConfig
    from tests.unit.kafka_pulse.status.test_document import slo

    schedule = SloSchedule([], SloConfig(), session=lambda: None)  # type: ignore[arg-type,return-value]
    board = StatusBoard(dataclasses.replace(sources(), slo=schedule), clock=lambda: AT)
    schedule.latest = [slo(0.9)]
    board.document()
    board.document()  # the same evaluation read twice is one point
    schedule.latest = [dataclasses.replace(slo(0.8), at=AT + timedelta(minutes=1))]
    (doc,) = board.document()["slos"]
    assert [p["budget_remaining"] for p in doc["history"]] == [0.9, 0.8]


def test_a_group_reading_from_disk_on_a_hurting_broker_carries_the_diagnosis() -> None:
    """The groups table gets the lag API status's noisy-neighbour diagnosis, from the board `run` shares with the
    slow-broker detector; with the broker's produce latency back to normal the group is named nowhere."""
    from lag.protocol import PageCacheEstimate
    from lag.service import LagService
    from pulse.broker_health import BrokerHealthBoard, BrokerSlowness
    from pulse.config import LagConfig

    now = 1_000_000
    health = BrokerHealthBoard()
    service = LagService(LagConfig(mode="enhanced", intervals=2), clock_ms=lambda: now, broker_health=health)
    with service.locked() as store:
        store.add_hwm("east", "orders", 0, 0, now - 200_000)
        store.add_hwm("east", "orders", 0, 2000, now)
        store.add_commit("east", "etl", "orders", 0, 500, now - 1000, now - 1000)
    service.set_page_cache("east", PageCacheEstimate({2: 60.0}, {("orders", 0): 2}))
    board = StatusBoard(dataclasses.replace(sources(), lag=service), clock=lambda: AT)

    health.publish("east", {2: BrokerSlowness(2, False, 0.0, "", 85.0, True)})
    (group,) = board.document()["groups"]
    (named,) = group["noisy_neighbour"]
    assert (named["broker"], named["topic"], named["partitions"]) == (2, "orders", [0])
    assert named["why"].startswith("noisy neighbour on broker 2: group etl reads topic orders (partition 0) ")
    assert named["why"] in group["reason"]

    health.publish("east", {2: BrokerSlowness(2, False, 0.0, "", 5.0, False)})
    (group,) = board.document()["groups"]
    assert group["noisy_neighbour"] == [] and "noisy neighbour" not in group["reason"]


# --- no silent drop: every configured cluster has a report in every refresh ---------------------------------------


def clusters(*names: str) -> list[ClusterConfig]:
    return [ClusterConfig(name=n, bootstrap_servers=[f"{n}.example:9092"]) for n in names]


def report(name: str, status: Status) -> Report:
    return Report(name, (f"{name}.example:9092",), (Section("brokers", status, ""),), AT, 0.1, 4.0)


@pytest.mark.parametrize(
    ("finished", "want", "overall"),
    [
        pytest.param({0: Status.OK, 1: Status.OK, 2: Status.OK}, ["OK", "OK", "OK"], "OK", id="all-finished"),
        pytest.param({0: Status.OK, 2: Status.OK}, ["OK", "UNKNOWN", "OK"], "UNKNOWN", id="one-missing-never-ok"),
        pytest.param({}, ["UNKNOWN", "UNKNOWN", "UNKNOWN"], "UNKNOWN", id="none-finished"),
        pytest.param({0: Status.WARN, 2: Status.OK}, ["WARN", "UNKNOWN", "OK"], "WARN", id="a-known-problem-outranks"),
        pytest.param({1: Status.CRIT}, ["UNKNOWN", "CRIT", "UNKNOWN"], "CRIT", id="crit-outranks-missing"),
    ],
)
def test_a_check_that_did_not_finish_is_unknown_with_the_reason(
    finished: dict[int, Status], want: list[str], overall: str
) -> None:
    configured = clusters("east", "west", "north")
    got = every_cluster(configured, {i: report(configured[i].name, s) for i, s in finished.items()}, AT, 6.0)
    assert [r.cluster for r in got] == ["east", "west", "north"]  # every configured cluster, in config order
    assert [r.status.value for r in got] == want
    for i, r in enumerate(got):
        if i not in finished:
            (section,) = r.sections
            assert section.reasons == ("check did not finish within 4.0 s",)
            assert r.bootstrap_servers == (f"{r.cluster}.example:9092",)
    doc = status_document(StatusInputs(AT, 5.0, got))
    assert doc["status"] == overall
    assert [(c["cluster"], c["status"]) for c in doc["clusters"]] == list(
        zip(["east", "west", "north"], want, strict=True)
    )


def test_a_check_that_overruns_stays_on_the_page_as_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refresh waits CHECK_TIMEOUT_S + JOIN_GRACE_S for a hung check, then publishes every cluster: the hung
    one UNKNOWN, the overall verdict UNKNOWN although the other cluster is OK."""
    monkeypatch.setattr(board_module, "CHECK_TIMEOUT_S", 0.05)
    monkeypatch.setattr(board_module, "JOIN_GRACE_S", 0.05)
    release = threading.Event()

    def check(config: PulseConfig, cluster: ClusterConfig, deadline: Deadline) -> tuple[Section, ...]:
        if cluster.name == "west":
            release.wait(30)  # overruns its deadline, as a check on a starved host can
        return (Section("brokers", Status.OK, f"{cluster.name} brokers"),)

    board = StatusBoard(sources(), check=check, clock=lambda: AT)
    try:
        board.refresh()
    finally:
        release.set()
    doc = board.document()
    assert [(c["cluster"], c["status"]) for c in doc["clusters"]] == [("east", "OK"), ("west", "UNKNOWN")]
    assert doc["status"] == "UNKNOWN"
    (section,) = doc["clusters"][1]["checks"]
    assert section["reasons"] == ["check did not finish within 0.05 s"]


# --- /api/status built once per refresh, served from its bytes (issue 23, 11) --------------------------------------


def test_api_status_is_built_once_per_refresh_and_requests_send_its_bytes() -> None:
    """A refresh reads every group once (one scrape's rows) and encodes the document; requests only send those
    bytes, evaluating nothing (the object path would raise), and a request naming the ETag gets 304."""
    from kafka_pulse.status.routes import load_assets, status_routes
    from lag.protocol import GroupStatus
    from lag.service import LagService
    from pulse.config import LagConfig
    from pulse.http import HttpApp, Request, Router

    class CountedService(LagService):
        passes = 0

        def scrape_rows(self, now_ms: int) -> list[Any]:
            self.passes += 1
            return super().scrape_rows(now_ms)

        def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]:
            raise AssertionError("nothing evaluates every group as objects")

    now = 1_000_000
    service = CountedService(LagConfig(intervals=2), clock_ms=lambda: now)
    with service.locked() as store:
        store.add_hwm("east", "orders", 0, 0, now - 200_000)
        store.add_hwm("east", "orders", 0, 2000, now)
        store.add_commit("east", "etl", "orders", 0, 2000, now - 1000, now - 1000)

    def check(config: PulseConfig, cluster: ClusterConfig, deadline: Deadline) -> tuple[Section, ...]:
        return (Section("brokers", Status.OK, f"{cluster.name} brokers"),)

    board = StatusBoard(dataclasses.replace(sources(), lag=service), check=check, clock=lambda: AT)
    app = HttpApp(Router(status_routes(board.encoded, load_assets())))
    board.refresh()
    assert (service.passes, board.publications) == (1, 1)
    first, second = (app.handle(Request("GET", "/api/status")) for _ in range(2))
    assert first.status == second.status == 200 and first.body == second.body
    assert (service.passes, board.publications) == (1, 1)  # two requests: nothing read, nothing built
    doc = json.loads(first.body)
    assert [g["group"] for g in doc["groups"]] == ["etl"] and doc["groups_limit"] == 100
    etag = dict(first.headers)["ETag"]
    again = app.handle(Request("GET", "/api/status", headers={"if-none-match": f'W/{etag}, "other"'}))
    assert (again.status, again.body, dict(again.headers)["ETag"]) == (304, b"", etag)
    board.refresh()
    assert (service.passes, board.publications) == (2, 2)


def test_the_first_request_before_any_refresh_builds_the_document_once() -> None:
    board = StatusBoard(sources(), clock=lambda: AT)
    first = board.encoded()
    assert board.encoded() is first and board.publications == 1
    assert json.loads(first.body)["status"] == "UNKNOWN"
