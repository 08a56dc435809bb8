"""The `/api/status` document from hand-made inputs: the overall verdict is the check's, a dead broker is named
with its reason and blamed for its partitions, groups carry the rule that fired, SLOs their burn-down points, and
every key is the one docs/status-page.md lists."""

from __future__ import annotations

import dataclasses
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kafka_pulse.check.judge.partition_verdict import judge_partitions
from kafka_pulse.check.judge.verdict import Report, Section, Status, judge_brokers
from kafka_pulse.status.document import (
    SCHEMA,
    CanaryReading,
    SloPoint,
    SloView,
    StatusInputs,
    slo_key,
    status_document,
)
from lag.protocol import CommitPoint, GroupStatus, PartitionVerdict
from lag.protocol import Status as LagStatus
from slo.results import AlertResult, SloResult
from tests.unit.kafka_pulse.test_check_verdict import meta, probe, ref

DOC = Path(__file__).resolve().parents[4] / "docs" / "status-page.md"
AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
INF = math.inf


def broker_2_dead() -> Report:
    facts = meta(
        registered=(1, 3),
        under_replicated=(ref(0, 1, (1, 2, 3), (1, 3)),),
        diagnosis_scope="broker",
        diagnosis_brokers=(2,),
    )
    sections = (
        judge_brokers(facts, {1: probe(1), 3: probe(3)}),
        judge_partitions(facts),
        Section("lag", Status.INFO, "2 groups"),
    )
    return Report("dev", ("127.0.0.1:9092",), sections, AT, 1.0, 4.0)


def canary() -> CanaryReading:
    return CanaryReading(
        cluster="dev",
        window_s=60.0,
        latency_window_s=300.0,
        racks={1: "az-a", 2: "az-b", 3: "az-b"},
        up={1: True, 2: False, 3: True},
        availability={1: 1.0, 2: 0.5, 3: None},
        latency={1: {0.001: 0, 0.002: 10, INF: 10}, 3: {0.001: 10, 0.002: 10, INF: 10}},
    )


def lagging_group() -> GroupStatus:
    stopped = PartitionVerdict(
        "orders",
        0,
        LagStatus.STOP,
        CommitPoint(10, 1000, 5),
        CommitPoint(10, 2000, 90),
        90,
        1.0,
        reason="STOP: no commit for 600 s > window span 400 s",
        lag_seconds=620.0,
    )
    fine = PartitionVerdict("orders", 1, LagStatus.OK, None, CommitPoint(5, 2000, 0), 0, 1.0)
    return GroupStatus("dev", "billing/eu", LagStatus.ERR, 1.0, (stopped, fine), 2, stopped, 90, "", 620.0)


def slo(remaining: float) -> SloResult:
    return SloResult(
        name="produce",
        labels={"cluster": "dev"},
        objective=99.9,
        window="30d",
        at=AT,
        period_start=AT - timedelta(30),
        period_end=None,
        good=990.0,
        total=1000.0,
        sli=0.99,
        budget_consumed=1 - remaining,
        budget_remaining=remaining,
        burn_rates={"1h": 14.4, "6h": None},
        alerts=(AlertResult("page", True, ()), AlertResult("ticket", False, ())),
        exhaustion_at=AT + timedelta(hours=3),
        projected_sli=None,
        projected_at=None,
        forecast_window="6h",
        budgeting="occurrences",
    )


def document() -> dict[str, Any]:
    key = slo_key("produce", {"cluster": "dev"})
    history = {key: [SloPoint(AT - timedelta(minutes=1), 0.5), SloPoint(AT, 0.4)]}
    return status_document(
        StatusInputs(
            generated_at=AT,
            refresh_s=5.0,
            reports=[broker_2_dead()],
            canary=canary(),
            groups=[lagging_group()],
            slo=SloView([slo(0.4)], history, runs_ok=2),
            off={"collectors": "collectors.enabled is false"},
            grafana_url="http://127.0.0.1:3000/",
        )
    )


def test_overall_verdict_is_the_checks() -> None:
    doc = document()
    assert doc["schema"] == SCHEMA
    assert doc["status"] == "CRIT"  # broker 2 unregistered: the brokers section is CRIT
    (cluster,) = doc["clusters"]
    assert cluster["culprits"] == [2]
    assert [c["name"] for c in cluster["checks"]] == ["brokers", "partitions", "lag"]


def test_no_check_yet_is_unknown_never_ok() -> None:
    doc = status_document(StatusInputs(generated_at=AT, refresh_s=5.0))
    assert (doc["status"], doc["checked_at"], doc["groups"], doc["slos"]) == ("UNKNOWN", None, None, None)


def test_the_dead_broker_is_named_with_its_reason_and_canary_figures() -> None:
    brokers = {b["id"]: b for b in document()["brokers"]}
    assert brokers[2]["up"] is False
    assert brokers[2]["reason"] == "broker 2 is not registered with the cluster (down or fenced) but holds replicas"
    assert brokers[1]["up"] is True and brokers[1]["rack"] == "az-a"
    assert brokers[1]["canary"]["availability"] == 1.0
    assert brokers[1]["canary"]["latency_p50_s"] == pytest.approx(0.0015)
    assert brokers[2]["canary"] == {
        "connection_up": False,
        "availability": 0.5,
        "latency_p50_s": None,
        "latency_p99_s": None,
    }


def test_azs_aggregate_their_brokers() -> None:
    azs = {z["rack"]: z for z in document()["azs"]}
    assert azs["az-b"]["brokers"] == [2, 3] and azs["az-b"]["brokers_up"] == 1
    assert azs["az-b"]["availability"] == 0.5  # broker 3 has no verdict yet: not counted as 1.0
    assert azs["az-b"]["latency_p50_s"] == pytest.approx(0.0005)


def test_partitions_blame_the_replicas_missing_from_the_isr() -> None:
    partitions = document()["partitions"]
    (row,) = partitions["under_replicated"]
    assert (row["topic"], row["partition"], row["blame"]) == ("orders", 0, [2])
    assert partitions["offline"] == [] and partitions["under_min_isr"] == []


def test_a_group_carries_its_worst_partition_and_the_rule_that_fired() -> None:
    (group,) = document()["groups"]
    assert (group["status"], group["worst_partition_status"]) == ("ERR", "STOP")
    assert group["reason"] == "STOP: no commit for 600 s > window span 400 s"
    assert (group["totallag"], group["lag_seconds"]) == (90, 620.0)
    assert group["lag_url"] == "/v3/kafka/dev/consumer/billing%2Feu/lag"
    assert group["noisy_neighbour"] == []


def test_a_noisy_neighbour_is_named_in_the_group_s_row() -> None:
    from lag.protocol import NoisyNeighbour

    n = NoisyNeighbour(2, "billing/eu", "orders", (0,), 620.0, 60.0, 85.0, False, "")
    group = dataclasses.replace(lagging_group(), noisy_neighbours=(n,))
    (row,) = status_document(StatusInputs(generated_at=AT, refresh_s=5.0, groups=[group]))["groups"]
    assert row["noisy_neighbour"] == [{"broker": 2, "topic": "orders", "partitions": [0], "why": n.describe()}]
    assert row["reason"] == f"STOP: no commit for 600 s > window span 400 s; {n.describe()}"
    assert "noisy neighbour on broker 2: group billing/eu reads topic orders" in row["reason"]


def test_slos_carry_figures_alerts_and_burn_down_points() -> None:
    (s,) = document()["slos"]
    assert s["firing"] == ["page"] and s["burn_rates"] == {"1h": 14.4, "6h": None}
    assert s["exhaustion_at"] == "2026-01-01T15:00:00Z"
    assert s["history"] == [
        {"at": "2026-01-01T11:59:00Z", "budget_remaining": 0.5},
        {"at": "2026-01-01T12:00:00Z", "budget_remaining": 0.4},
    ]


def test_links_to_grafana_only_when_configured() -> None:
    links = document()["links"]
    assert links["grafana"][0] == {
        "title": "Kafka cluster overview",
        "url": "http://127.0.0.1:3000/d/kafka-pulse-cluster",
    }
    assert links["burrow_api"] == "/v3/kafka"
    assert status_document(StatusInputs(generated_at=AT, refresh_s=5.0, grafana_url=None))["links"]["grafana"] == []


def test_every_key_is_documented() -> None:
    """Each key of the document appears in docs/status-page.md as `key`."""
    documented = set(re.findall(r"`([a-z_0-9]+)`", DOC.read_text()))

    def keys(value: object, path: str) -> set[str]:
        if isinstance(value, dict):
            found = set()
            for k, v in value.items():
                if path in ("burn_rates", "labels", "off", "details"):
                    continue  # data (window names, labels, components) or the check's (docs/check.md)
                found |= {k} | keys(v, k)
            return found
        if isinstance(value, list):
            return set().union(*(keys(v, path) for v in value)) if value else set()
        return set()

    missing = keys(document(), "") - documented
    assert not missing, f"keys missing from {DOC.name}: {sorted(missing)}"


def test_groups_dropped_at_ingestion_are_a_count_per_cluster_and_reason() -> None:
    counts = {"east": {"name_too_long": 3, "too_many_groups": 0}, "west": {"too_many_groups": 7}}
    doc = status_document(StatusInputs(generated_at=AT, refresh_s=5.0, groups=[], groups_dropped=counts))
    assert doc["groups_dropped"] == [
        {"cluster": "east", "reason": "name_too_long", "records": 3},
        {"cluster": "west", "reason": "too_many_groups", "records": 7},
    ]
    assert status_document(StatusInputs(generated_at=AT, refresh_s=5.0))["groups_dropped"] is None  # lag off


def test_latency_columns_say_how_much_history_they_hold() -> None:
    """Two minutes into a run the quantiles cover 2 min of their 5: the document says so (the page prints
    "2 min of 5"), instead of leaving the reader to guess why a cell is empty."""
    young = dataclasses.replace(canary(), latency_window_s=125.04)
    doc = status_document(StatusInputs(generated_at=AT, refresh_s=5.0, canary=young))
    assert doc["canary_history"] == {"latency_history_s": 125.0, "latency_span_s": 300.0}
    assert status_document(StatusInputs(generated_at=AT, refresh_s=5.0))["canary_history"] is None
