"""The noisy-neighbour join (issue: lagging consumers reading from disk raise produce latency for every other topic
on their leader, after the Kuaishou seed): broker verdict x group-partitions beyond the page cache x leadership,
table-driven without servers; then the same through a `LagService`, its Burrow v3 status and its /metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from lag.diagnose.noisy_neighbour import DiskRead, diagnose, disk_read, is_hurting
from lag.protocol import ClusterRows, NoisyNeighbour, PageCacheEstimate
from lag.serve.burrow_json import group_status_json
from lag.serve.metrics import LagCollector
from lag.service import LagService
from pulse.broker_health import BrokerHealthBoard, BrokerSlowness
from pulse.config import LagConfig
from pulse.http.exposition import encode


def verdict(broker: int, slow: bool = False, elevated: bool = False, ms: float | None = 40.0) -> BrokerSlowness:
    return BrokerSlowness(broker, slow, 9.0 if slow else 0.0, "produce p99 3x peers" if slow else "", ms, elevated)


LEADERS = {("big", 0): 2, ("big", 1): 2, ("big", 2): 3, ("other", 0): 2}


@dataclass(frozen=True)
class Case:
    brokers: dict[int, BrokerSlowness]
    reads: tuple[DiskRead, ...]
    want: tuple[tuple[int, str, str, tuple[int, ...]], ...]
    """(broker, group, topic, partitions) named."""


def read(group: str, topic: str, partition: int, lag_s: float = 300.0, window_s: float = 60.0) -> DiskRead:
    return DiskRead(group, topic, partition, lag_s, window_s)


CASES = [
    pytest.param(
        Case({2: verdict(2, elevated=True)}, (read("g", "big", 0), read("g", "big", 1)), ((2, "g", "big", (0, 1)),)),
        id="elevated leader + reads beyond cache on it: named with both partitions",
    ),
    pytest.param(
        Case({2: verdict(2, slow=True)}, (read("g", "big", 0),), ((2, "g", "big", (0,)),)),
        id="flagged slow counts as hurting too",
    ),
    pytest.param(
        Case({2: verdict(2)}, (read("g", "big", 0),), ()),
        id="leader healthy: a disk read alone names nobody (lag is not a fault)",
    ),
    pytest.param(
        Case({3: verdict(3, elevated=True)}, (read("g", "big", 0), read("g", "big", 1)), ()),
        id="hurting broker leads none of the partitions read: nobody",
    ),
    pytest.param(
        Case(
            {2: verdict(2, elevated=True), 3: verdict(3, slow=True)},
            (read("g", "big", 0), read("g", "big", 2)),
            ((2, "g", "big", (0,)), (3, "g", "big", (2,))),
        ),
        id="two hurting brokers: one row each, sorted by broker",
    ),
    pytest.param(
        Case({2: verdict(2, elevated=True)}, (read("g", "nowhere", 0),), ()),
        id="unknown leader: nobody",
    ),
    pytest.param(
        Case(
            {2: verdict(2, elevated=True)},
            (read("h", "other", 0), read("g", "big", 1)),
            ((2, "g", "big", (1,)), (2, "h", "other", (0,))),
        ),
        id="two groups on one broker: sorted by group",
    ),
    pytest.param(Case({}, (read("g", "big", 0),), ()), id="no verdicts (no detector): nobody"),
]


@pytest.mark.parametrize("case", CASES)
def test_diagnose(case: Case) -> None:
    found = diagnose(case.brokers, case.reads, LEADERS)
    assert tuple((n.broker, n.group, n.topic, n.partitions) for n in found) == case.want
    for n in found:
        assert is_hurting(case.brokers[n.broker])


def test_the_numbers_are_the_worst_lag_and_the_window() -> None:
    [n] = diagnose(
        {2: verdict(2, elevated=True, ms=85.0)}, (read("g", "big", 0, 120.0, 60.0), read("g", "big", 1, 400.0, 60.0)),
        LEADERS,
    )  # fmt: skip
    assert (n.lag_seconds, n.window_s, n.produce_latency_ms, n.broker_slow) == (400.0, 60.0, 85.0, False)
    assert n.describe() == (
        "noisy neighbour on broker 2: group g reads topic big (partition 0,1) 400 s back, beyond the 60 s page "
        "cache, while the broker shows elevated produce latency (85 ms)"
    )


@pytest.mark.parametrize(
    ("lag_s", "exact_s", "window_s", "beyond", "want"),
    [
        pytest.param(300.0, None, 60.0, True, 300.0, id="beyond: the interpolated lag"),
        pytest.param(300.0, 500.0, 60.0, True, 500.0, id="exact time lag wins when known"),
        pytest.param(30.0, None, 60.0, False, None, id="within the cache: not a disk read"),
        pytest.param(300.0, None, None, None, None, id="window unknown: not a disk read"),
        pytest.param(300.0, None, math.inf, True, None, id="infinite window (idle broker): not a disk read"),
        pytest.param(None, None, 60.0, None, None, id="time lag unknown"),
    ],
)
def test_disk_read(
    lag_s: float | None, exact_s: float | None, window_s: float | None, beyond: bool | None, want: float | None
) -> None:
    got = disk_read("g", "t", 0, lag_s, exact_s, window_s, beyond)
    assert (got.lag_seconds if got is not None else None) == want


NOW = 1_000_000


class CountedService(LagService):
    """The real service, counting its full evaluations for /metrics."""

    scrapes = 0

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]:
        self.scrapes += 1
        return super().scrape_rows(now_ms)


def lagging_service(board: BrokerHealthBoard | None) -> LagService:
    """Group g: partition 0 one second behind, partition 1 150 s behind (10 records/s); both led by broker 2,
    whose page cache holds 60 s."""
    service = CountedService(LagConfig(mode="enhanced", intervals=2), clock_ms=lambda: NOW, broker_health=board)
    with service.locked() as store:
        for p in (0, 1):
            store.add_hwm("c", "t", p, 0, NOW - 200_000)
            store.add_hwm("c", "t", p, 2000, NOW)
        store.add_commit("c", "g", "t", 0, 1990, NOW - 1000, NOW - 1000)
        store.add_commit("c", "g", "t", 1, 500, NOW - 1000, NOW - 1000)
    service.set_page_cache("c", PageCacheEstimate({2: 60.0}, {("t", 0): 2, ("t", 1): 2}))
    return service


def scrape(service: LagService) -> str:
    registry = CollectorRegistry()
    registry.register(LagCollector(service))
    return encode(registry, generate_latest).decode()


def test_the_service_names_the_group_in_its_status_and_on_metrics() -> None:
    board = BrokerHealthBoard()
    service = lagging_service(board)
    board.publish("c", {1: verdict(1), 2: verdict(2, elevated=True, ms=85.0), 3: verdict(3)})
    status = service.group_status("c", "g")
    assert [(n.broker, n.topic, n.partitions) for n in status.noisy_neighbours] == [(2, "t", (1,))]
    body = group_status_json(status, "enhanced")
    [named] = body["noisy_neighbour"]
    assert (named["broker"], named["topic"], named["partitions"], named["page_cache_window_s"]) == (2, "t", [1], 60.0)
    assert named["lag_seconds"] == pytest.approx(150.0, abs=1.0)
    assert "noisy neighbour on broker 2: group g reads topic t" in body["reason"]
    text = scrape(service)
    assert 'kafka_pulse_noisy_neighbour{broker="2",cluster="c",group="g",topic="t"} 1.0' in text
    assert (
        'kafka_pulse_noisy_neighbour_page_cache_window_seconds{broker="2",cluster="c",group="g",topic="t"} 60.0' in text
    )
    assert 'kafka_pulse_noisy_neighbour_produce_latency_seconds{broker="2",cluster="c"} 0.085' in text


@pytest.mark.parametrize(
    "published",
    [
        pytest.param({2: verdict(2)}, id="healthy broker"),
        pytest.param({}, id="board empty: no detector publishing"),
        pytest.param(None, id="no board: standalone lag"),
    ],
)
def test_nothing_is_named_without_a_hurting_leader(published: dict[int, BrokerSlowness] | None) -> None:
    board = None if published is None else BrokerHealthBoard()
    if board is not None and published is not None:
        board.publish("c", published)
    service = lagging_service(board)
    status = service.group_status("c", "g")
    assert status.noisy_neighbours == ()
    assert "noisy_neighbour" not in group_status_json(status, "enhanced")
    assert "kafka_pulse_noisy_neighbour{" not in scrape(service)


def test_burrow_mode_keeps_its_fields_and_adds_the_diagnosis_as_an_extra_key() -> None:
    board = BrokerHealthBoard()
    board.publish("c", {2: verdict(2, slow=True)})
    service = lagging_service(board)
    body = group_status_json(service.group_status("c", "g"), "burrow")
    assert "reason" not in body
    assert [n["broker"] for n in body["noisy_neighbour"]] == [2]
    assert isinstance(body["noisy_neighbour"][0], dict) and body["noisy_neighbour"][0]["broker_slow"] is True


def test_noisy_neighbour_is_a_frozen_value() -> None:
    n = NoisyNeighbour(2, "g", "t", (0,), 1.0, 1.0, None, False, "")
    with pytest.raises(AttributeError):
        n.broker = 3  # type: ignore[misc]


def test_one_scrape_evaluates_every_group_once_while_a_broker_is_slow() -> None:
    """The lag families and the noisy neighbours come from one pass: before, a slow broker made the neighbours'
    collector evaluate every group a second time."""
    board = BrokerHealthBoard()
    board.publish("c", {2: verdict(2, slow=True)})
    service = lagging_service(board)
    assert isinstance(service, CountedService)
    text = scrape(service)
    assert 'kafka_pulse_noisy_neighbour{broker="2",cluster="c",group="g",topic="t"} 1.0' in text
    assert 'kafka_consumergroup_group_lag{cluster_name="c",group="g"' in text
    assert service.scrapes == 1
