"""The noisy-neighbour diagnosis (`noisy_neighbour.py`) applied to the running lag service: per group for the lag
API's status, per cluster for /metrics. It reads the slow-broker board the service was given (`run` shares the
collectors' detector's); without a board, or while no broker's produce latency is up, it names nobody and costs
nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.diagnose.noisy_neighbour import DiskRead, diagnose, disk_read, is_hurting
from lag.protocol import ClusterRows, GroupStatus, NoisyNeighbour
from lag.store.access import LagReader
from pulse.broker_health import BrokerHealthBoard

LABELS = ["cluster", "broker", "group", "topic"]


def with_noisy_neighbours(service: LagReader, status: GroupStatus) -> GroupStatus:
    """`status` with the (broker, topic) pairs its group is named for; unchanged when nothing is diagnosed."""
    board, estimate = service.broker_health, service.page_caches().get(status.cluster)
    if board is None or estimate is None or not status.partitions:
        return status
    brokers = board.snapshot(status.cluster)
    if not any(is_hurting(v) for v in brokers.values()):
        return status
    reads = (
        disk_read(status.group, v.topic, v.partition, v.lag_seconds, v.exact_lag_seconds, v.page_cache_window_s,
                  v.beyond_page_cache)
        for v in status.partitions
    )  # fmt: skip
    found = diagnose(brokers, (r for r in reads if r is not None), estimate.leaders)
    return dataclasses.replace(status, noisy_neighbours=tuple(found)) if found else status


def cluster_noisy_neighbours(
    service: LagReader, board: BrokerHealthBoard, now_ms: int
) -> list[tuple[str, NoisyNeighbour]]:
    """(cluster, diagnosis) for every cluster with a hurting broker, from one columnar evaluation of the groups.
    Evaluates only while some broker's produce latency is up; otherwise returns at once."""
    page_caches = service.page_caches()
    hurting = {c for c in service.clusters() if c in page_caches and any(map(is_hurting, board.snapshot(c).values()))}
    if not hurting:
        return []
    out = []
    for rows in service.scrape_rows(now_ms):
        if rows.cluster in hurting:
            estimate = page_caches[rows.cluster]
            reads = _disk_reads(rows, estimate.window_for)
            out += [(rows.cluster, n) for n in diagnose(board.snapshot(rows.cluster), reads, estimate.leaders)]
    return out


def _disk_reads(rows: ClusterRows, window_for: Callable[[str, int], float | None]) -> Iterator[DiskRead]:
    """The rows whose page-cache hint says beyond (1.0), as `DiskRead`s."""
    for r in np.flatnonzero(rows.beyond_page_cache == 1.0).tolist():
        group = rows.names[int(np.searchsorted(rows.starts, r, side="right")) - 1]
        topic, partition = rows.topic_names[int(rows.topic_ids[r])], int(rows.partitions[r])
        exact, approx = float(rows.part_exact_seconds[r]), float(rows.part_lag_seconds[r])
        read = disk_read(group, topic, partition, None if np.isnan(approx) else approx,
                         None if np.isnan(exact) else exact, window_for(topic, partition), True)  # fmt: skip
        if read is not None:
            yield read


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
