"""The noisy-neighbour families on /metrics, from the diagnosis the enrichment step (lag/diagnose/enrich.py) put in
the scrape's rows. Without a slow-broker board, or while no broker's produce latency is up, it names nobody and
costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.diagnose.noisy_neighbour import is_hurting
from lag.protocol import NoisyNeighbour
from lag.store.access import LagReader
from pulse.broker_health import BrokerHealthBoard

LABELS = ["cluster", "broker", "group", "topic"]


def cluster_noisy_neighbours(
    service: LagReader, board: BrokerHealthBoard, now_ms: int
) -> list[tuple[str, NoisyNeighbour]]:
    """(cluster, diagnosis) for every cluster with a hurting broker, from the scrape's rows (enriched once, by
    lag/diagnose/enrich.py). Evaluates only while some broker's produce latency is up; otherwise returns at once."""
    page_caches = service.page_caches()
    if not any(c in page_caches and any(map(is_hurting, board.snapshot(c).values())) for c in service.clusters()):
        return []
    return [(rows.cluster, n) for rows in service.scrape_rows(now_ms) for n in rows.noisy_neighbours]


class NoisyNeighbourCollector(Collector):
    """`kafka_pulse_noisy_neighbour{cluster,broker,group,topic}` (1 per diagnosis) and its numbers; no series at all
    while nothing is diagnosed or no board is given (standalone `lag` without a detector)."""

    def __init__(self, service: LagReader) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        named = GaugeMetricFamily(
            "kafka_pulse_noisy_neighbour",
            "1 while the group reads the topic beyond the page cache on a broker whose produce latency is up.",
            labels=LABELS,
        )
        lag = GaugeMetricFamily(
            "kafka_pulse_noisy_neighbour_lag_seconds",
            "How far back the named group reads the topic's partitions led by the broker (largest time lag).",
            labels=LABELS,
        )
        window = GaugeMetricFamily(
            "kafka_pulse_noisy_neighbour_page_cache_window_seconds",
            "The page-cache window that lag exceeds (seconds of recent data the broker's page cache holds).",
            labels=LABELS,
        )
        latency = GaugeMetricFamily(
            "kafka_pulse_noisy_neighbour_produce_latency_seconds",
            "The broker's produce latency as the slow-broker detector reported it, for brokers with a diagnosis.",
            labels=["cluster", "broker"],
        )
        board = self.service.broker_health
        found = [] if board is None else cluster_noisy_neighbours(self.service, board, self.service.clock_ms())
        latencies: dict[tuple[str, str], float] = {}
        for cluster, n in found:
            labels = [cluster, str(n.broker), n.group, n.topic]
            named.add_metric(labels, 1.0)
            lag.add_metric(labels, n.lag_seconds)
            window.add_metric(labels, n.window_s)
            if n.produce_latency_ms is not None:
                latencies[(cluster, str(n.broker))] = n.produce_latency_ms / 1000.0
        for key, seconds in sorted(latencies.items()):
            latency.add_metric(list(key), seconds)
        yield from (named, lag, window, latency)
