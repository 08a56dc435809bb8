"""Test oracle: the lag evaluator's group and partition families as client_python objects built from every
`GroupStatus`, as lag/serve/metrics.py produced them before it wrote them from the evaluator's arrays. Kept apart
from the
product path; tests compare the two renderings byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.service import LagService


class ObjectLagCollector(Collector):
    """The group and partition families built from `LagService.all_statuses()` objects, as lag/serve/metrics.py did."""

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
