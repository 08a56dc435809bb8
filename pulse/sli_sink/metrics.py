"""The SLI sink's counters as Prometheus families `kafka_pulse_sli_sink_*` (docs/metrics.md), read at scrape."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.sli_sink.sink import SliSink

PREFIX = "kafka_pulse_sli_sink"


class SliSinkCollector(Collector):
    """One sink's families; a process has one sink per spool directory, so no label tells sinks apart."""

    def __init__(self, sink: SliSink) -> None:
        self.sink = sink

    def collect(self) -> Iterator[Metric]:
        s = self.sink.stats()
        yield CounterMetricFamily(f"{PREFIX}_events_queued", "SLI events written to the on-disk spool.", s.queued)
        yield CounterMetricFamily(
            f"{PREFIX}_events_delivered", "SLI events the Kafka cluster acknowledged (acks=all).", s.delivered
        )
        dropped = CounterMetricFamily(
            f"{PREFIX}_events_dropped",
            "SLI events lost: queue_full, spool_full (oldest first), spool_error, corrupt or rejected.",
            labels=["reason"],
        )
        for reason, count in sorted(s.dropped.items()):
            dropped.add_metric([reason], count)
        yield dropped
        yield CounterMetricFamily(
            f"{PREFIX}_delivery_errors", "Delivery rounds that failed (their events stay spooled).", s.delivery_errors
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_pending_events",
            "SLI events not delivered yet: handed over in memory plus spooled on disk.",
            value=s.handoff_rows + s.spool_events,
        )
        yield GaugeMetricFamily(f"{PREFIX}_spool_bytes", "Size of the on-disk spool.", value=s.spool_bytes)
        if s.last_delivery_unix_s is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_last_delivery_timestamp_seconds",
                "When the cluster last acknowledged events.",
                value=s.last_delivery_unix_s,
            )
