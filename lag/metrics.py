"""Prometheus families for the lag evaluator: a client_python `Collector` that evaluates every group at scrape time (as
Burrow's `/metrics` does) and yields Burrow's (`core/internal/httpserver/prometheus.go`) and kafka-lag-exporter's
(`Metrics.scala`) family names, plus ours (`kafka_pulse_lag_*`): exact time lag, the page-cache hint, source freshness
and ingestion counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.service import LagService


class LagCollector(Collector):
    """Register with a `CollectorRegistry`; nothing is module-level."""

    def __init__(self, service: LagService, granularity: Literal["partition", "group"] = "partition") -> None:
        self.service = service
        self.granularity = granularity
        """`group` leaves out the per-partition families: at 200k partitions they are most of a scrape's series."""

    def collect(self) -> Iterator[Metric]:
        g, gp = ["cluster", "consumer_group"], ["cluster", "consumer_group", "topic", "partition"]
        burrow_total = GaugeMetricFamily("burrow_kafka_consumer_lag_total", "Sum of partition lags.", labels=g)
        burrow_status = GaugeMetricFamily(
            "burrow_kafka_consumer_status", "Group status: 0 NOTFOUND 1 OK 2 WARN 3 ERR (-1 unknown).", labels=g
        )
        part_status = GaugeMetricFamily(
            "burrow_kafka_topic_partition_status", "Partition status: 1 OK 2 WARN 4 STOP 5 STALL 6 REWIND.", labels=gp
        )
        part_lag = GaugeMetricFamily("burrow_kafka_consumer_partition_lag", "Current lag in records.", labels=gp)
        part_offset = GaugeMetricFamily("burrow_kafka_consumer_current_offset", "Last committed offset.", labels=gp)
        kle = ["cluster_name", "group", "topic", "partition"]
        lag = GaugeMetricFamily("kafka_consumergroup_group_lag", "Lag in records.", labels=kle)
        lag_s = GaugeMetricFamily("kafka_consumergroup_group_lag_seconds", "Lag in seconds (interpolated).", labels=kle)
        max_lag = GaugeMetricFamily(
            "kafka_consumergroup_group_max_lag", "Largest partition lag.", labels=["cluster_name", "group"]
        )
        max_lag_s = GaugeMetricFamily(
            "kafka_consumergroup_group_max_lag_seconds", "Largest lag in seconds.", labels=["cluster_name", "group"]
        )
        sum_lag = GaugeMetricFamily(
            "kafka_consumergroup_group_sum_lag", "Sum of lags.", labels=["cluster_name", "group"]
        )
        ours = ["cluster", "consumer_group", "topic", "partition"]
        exact = GaugeMetricFamily(
            "kafka_pulse_lag_exact_seconds", "Age of the record at the committed offset.", labels=ours
        )
        max_exact = GaugeMetricFamily(
            "kafka_pulse_lag_max_exact_seconds", "Largest exact partition lag of the group.", labels=g
        )
        beyond = GaugeMetricFamily(
            "kafka_pulse_lag_beyond_page_cache",
            "1 when the partition's lag reaches older data than its leader's page cache holds.",
            labels=ours,
        )
        statuses = self.service.all_statuses()
        for status in statuses:
            c, grp = status.cluster, status.group
            burrow_total.add_metric([c, grp], status.totallag)
            burrow_status.add_metric([c, grp], int(status.status))
            max_lag.add_metric([c, grp], status.maxlag.current_lag if status.maxlag else 0)
            sum_lag.add_metric([c, grp], status.totallag)
            if status.lag_seconds is not None:
                max_lag_s.add_metric([c, grp], status.lag_seconds)
            for p in status.partitions if self.granularity == "partition" else ():
                labels = [c, grp, p.topic, str(p.partition)]
                part_lag.add_metric(labels, p.current_lag)
                lag.add_metric(labels, p.current_lag)
                if p.lag_seconds is not None:
                    lag_s.add_metric(labels, p.lag_seconds)
                if p.complete == 1.0:  # Burrow sets these only for complete windows
                    part_status.add_metric(labels, int(p.status))
                if p.end is not None:
                    part_offset.add_metric(labels, p.end.offset)
                if p.exact_lag_seconds is not None:
                    exact.add_metric(labels, p.exact_lag_seconds)
                if p.beyond_page_cache is not None:
                    beyond.add_metric(labels, 1.0 if p.beyond_page_cache else 0.0)
            if status.exact_lag_seconds is not None:
                max_exact.add_metric([c, grp], status.exact_lag_seconds)
        yield from (burrow_total, burrow_status, part_status, part_lag, part_offset)
        yield from (lag, lag_s, max_lag, max_lag_s, sum_lag)
        yield from (exact, max_exact, beyond)
        yield from self._service_families()

    def _service_families(self) -> Iterator[Metric]:
        """Per cluster: is it judged (fresh), page-cache windows, records read; per result: commits ingested."""
        svc = self.service
        now = svc.clock_ms()
        up = GaugeMetricFamily(
            "kafka_pulse_lag_source_up", "1 when the cluster's offsets are fresh enough to judge its groups.",
            labels=["cluster"],
        )  # fmt: skip
        windows = GaugeMetricFamily(
            "kafka_pulse_lag_page_cache_window_seconds",
            "Seconds of recent writes the broker's page cache holds (estimate; absent while unknown).",
            labels=["cluster", "broker"],
        )
        records = CounterMetricFamily(
            "kafka_pulse_lag_offsets_records",
            "__consumer_offsets records read, by decoded kind (OffsetCommit, GroupMetadata, Undecodable...).",
            labels=["cluster", "kind"],
        )
        commits = CounterMetricFamily(
            "kafka_pulse_lag_commits", "Commits offered to the store, by what became of them.", labels=["result"]
        )
        with svc.lock:
            for cluster in svc.clusters():
                healthy = svc.health is None or svc.health.unavailable_reason(cluster, now) is None
                up.add_metric([cluster], 1.0 if healthy else 0.0)
            for cluster, estimate in sorted(svc.page_cache.items()):
                for broker, window in sorted(estimate.windows_s.items()):
                    if not math.isinf(window):
                        windows.add_metric([cluster, str(broker)], window)
            for cluster, counts in sorted(svc.decoded.items()):
                for kind, n in sorted(counts.items()):
                    records.add_metric([cluster, kind], n)
            for result, n in sorted(svc.store.ingested.items(), key=lambda item: item[0].value):
                commits.add_metric([result.value], n)
        yield from (up, windows, records, commits)
