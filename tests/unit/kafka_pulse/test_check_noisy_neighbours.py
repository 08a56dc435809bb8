"""The check's noisy-neighbour lines: read back from the families lag/serve/metrics.py renders (the same text a run
serves), then folded into the lag section as WARN lines naming broker, group, topic and the numbers."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from kafka_pulse.check.consult.noisy_neighbours import (
    NoisyNeighbourFact,
    NoisyNeighbourFacts,
    add_noisy_neighbours,
    parse_noisy_neighbours,
)
from kafka_pulse.check.facts import FailureKind, NotAvailable, ProbeFailed
from kafka_pulse.check.judge.verdict import Section, Status
from lag.protocol import PageCacheEstimate
from lag.serve.metrics import LagCollector
from lag.service import LagService
from pulse.broker_health import BrokerHealthBoard, BrokerSlowness
from pulse.config import LagConfig
from pulse.http.exposition import encode

NOW = 1_000_000
LAG = Section("lag", Status.INFO, "1 group, 1 read", ("one snapshot cannot ...",), details={"groups_listed": 1})


def served_metrics() -> str:
    """What a run's /metrics shows for a group reading 150 s back on broker 2 (60 s page cache, 85 ms produce)."""
    board = BrokerHealthBoard()
    service = LagService(LagConfig(mode="enhanced", intervals=2), clock_ms=lambda: NOW, broker_health=board)
    with service.locked() as store:
        store.add_hwm("prod", "orders", 0, 0, NOW - 200_000)
        store.add_hwm("prod", "orders", 0, 2000, NOW)
        store.add_commit("prod", "etl", "orders", 0, 500, NOW - 1000, NOW - 1000)
    service.set_page_cache("prod", PageCacheEstimate({2: 60.0}, {("orders", 0): 2}))
    board.publish("prod", {2: BrokerSlowness(2, False, 0.0, "", 85.0, True)})
    registry = CollectorRegistry()
    registry.register(LagCollector(service))
    return encode(registry, generate_latest).decode()


def test_the_run_s_families_read_back() -> None:
    [fact] = parse_noisy_neighbours(served_metrics(), "prod")
    assert (fact.broker, fact.group, fact.topic, fact.window_s) == (2, "etl", "orders", 60.0)
    assert fact.lag_seconds is not None and abs(fact.lag_seconds - 150.0) < 1.0
    assert fact.produce_latency_ms is not None and abs(fact.produce_latency_ms - 85.0) < 1e-9
    assert parse_noisy_neighbours(served_metrics(), "other-cluster") == []


def test_a_diagnosis_raises_the_lag_section_to_warn_with_a_line_naming_everything() -> None:
    fact = NoisyNeighbourFact(2, "etl", "orders", 150.4, 60.0, 85.0)
    section = add_noisy_neighbours(LAG, [fact])
    assert section.status is Status.WARN
    assert section.summary == "noisy neighbour on broker 2; 1 group, 1 read"
    assert section.reasons[0] == (
        "noisy neighbour on broker 2: group etl reads topic orders 150 s back, beyond the 60 s page cache, "
        "while the broker's produce latency is up (85 ms)"
    )
    assert section.reasons[1:] == LAG.reasons
    assert section.details["groups_listed"] == 1
    assert section.details["noisy_neighbours"] == [
        {
            "broker": 2,
            "group": "etl",
            "topic": "orders",
            "lag_seconds": 150.4,
            "page_cache_window_s": 60.0,
            "produce_latency_ms": 85.0,
        }
    ]


def test_nothing_named_or_no_run_leaves_the_section_as_it_was() -> None:
    nothing: list[NoisyNeighbourFacts] = [
        [],
        NotAvailable("no kafka-pulse run answers"),
        ProbeFailed(FailureKind.ERROR, "x"),
    ]
    for facts in nothing:
        section = add_noisy_neighbours(LAG, facts)
        assert (section.status, section.summary, section.reasons) == (LAG.status, LAG.summary, LAG.reasons)
        assert section.details["noisy_neighbours"] == []


def test_a_worse_lag_status_is_kept() -> None:
    crit = Section("lag", Status.CRIT, "x")
    assert add_noisy_neighbours(crit, [NoisyNeighbourFact(1, "g", "t", None, None, None)]).status is Status.CRIT
