"""The board's refresh without Kafka (the check is injected): one check per cluster makes the verdict, a check
that raises is UNKNOWN with its error (never OK), and reading the document runs no check."""

from __future__ import annotations

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
