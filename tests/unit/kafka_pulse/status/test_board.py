"""The board's refresh without Kafka (the check is injected): one check per cluster makes the verdict, a check
that raises is UNKNOWN with its error (never OK), and reading the document runs no check."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.verdict import Section, Status
from kafka_pulse.status.board import StatusBoard, StatusSources
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
