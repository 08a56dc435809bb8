"""The canary's histograms as slow-broker signals: bucket deltas and their interpolated p99."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram

from collectors.slow_broker_rules import Signal
from kafka_pulse.runner.canary_latency import CanaryLatencyFeed, bucket_quantile, increase

INF = float("inf")


@pytest.mark.parametrize(
    ("buckets", "q", "want"),
    [
        pytest.param({0.1: 0.0, 0.5: 0.0, INF: 0.0}, 0.99, None, id="empty"),
        pytest.param({0.1: 100.0, 0.5: 100.0, INF: 100.0}, 0.99, 0.099, id="all-in-first"),
        pytest.param({0.1: 50.0, 0.5: 100.0, INF: 100.0}, 0.5, 0.1, id="at-a-bound"),
        pytest.param({0.1: 0.0, 0.5: 100.0, INF: 100.0}, 0.99, 0.496, id="interpolated"),
        pytest.param({0.1: 0.0, 0.5: 0.0, INF: 10.0}, 0.99, 0.5, id="past-last-bound"),
    ],
)
def test_bucket_quantile(buckets: dict[float, float], q: float, want: float | None) -> None:
    got = bucket_quantile(buckets, q)
    assert got == (None if want is None else pytest.approx(want))


def test_increase_handles_reset() -> None:
    assert increase({1: {1.0: 5.0}}, {1: {1.0: 3.0}}) == {1: {1.0: 2.0}}
    assert increase({1: {1.0: 2.0}}, {1: {1.0: 3.0}}) == {1: {1.0: 2.0}}


class _Cluster:
    name = "dev"


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("cluster", "broker", "rack", "client_rack")
        self.produce_latency = Histogram("p", "p", labels, buckets=(0.01, 0.5), registry=registry)
        self.e2e_latency = Histogram("e", "e", (*labels, "replica"), buckets=(0.01, 0.5), registry=registry)


class _Canary:
    cluster = _Cluster()

    def __init__(self) -> None:
        self.metrics = _Metrics(CollectorRegistry())


def test_feed_reads_only_the_interval() -> None:
    canary = _Canary()
    feed = CanaryLatencyFeed(lambda: canary)
    for _ in range(100):
        canary.metrics.produce_latency.labels("dev", "2", "az-b", "").observe(0.4)
    canary.metrics.e2e_latency.labels("dev", "2", "az-b", "", "closest").observe(0.4)
    first = feed("dev")
    assert first[2][Signal.CANARY_PRODUCE] == pytest.approx(495.1)
    assert Signal.CANARY_E2E not in first[2], "closest-replica reads are not the leader's"
    for _ in range(100):
        canary.metrics.produce_latency.labels("dev", "2", "az-b", "").observe(0.002)
    assert feed("dev")[2][Signal.CANARY_PRODUCE] == pytest.approx(9.9)
    assert feed("other") == {}
    assert CanaryLatencyFeed(lambda: None)("dev") == {}
