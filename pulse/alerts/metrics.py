"""The alert sink's counters as Prometheus families (docs/metrics.md, Alerting)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.alerts.sink import AlertSink


class AlertSinkCollector(Collector):
    """The sink's counters as Prometheus families; register it with a `CollectorRegistry` (nothing module-level)."""

    def __init__(self, sink: AlertSink) -> None:
        self.sink = sink

    def collect(self) -> Iterator[Metric]:
        stats = self.sink.stats
        yield CounterMetricFamily("kafka_pulse_alerts_sent", "Alerts Alertmanager accepted.", value=stats.sent)
        yield CounterMetricFamily(
            "kafka_pulse_alerts_failed", "Alerts in POSTs to Alertmanager that failed; they were spooled.", stats.failed
        )
        yield CounterMetricFamily("kafka_pulse_alerts_spooled", "Alerts written to the on-disk spool.", stats.spooled)
        yield CounterMetricFamily(
            "kafka_pulse_alerts_superseded",
            "Spooled alert states replaced by a newer state of the same incident before delivery.",
            stats.superseded,
        )
        dropped = CounterMetricFamily("kafka_pulse_alerts_dropped", "Alerts lost, by reason.", labels=["reason"])
        for reason, count in stats.dropped.items():
            dropped.add_metric([reason], count)
        yield dropped
        yield GaugeMetricFamily("kafka_pulse_alert_spool_entries", "Alerts waiting in the spool.", stats.spool_entries)
        yield GaugeMetricFamily("kafka_pulse_alert_spool_bytes", "Size of the spool file.", stats.spool_bytes)
        yield CounterMetricFamily(
            "kafka_pulse_alert_spool_errors",
            "Spool operations that failed (missing, read-only, full, unreadable); delivery went live meanwhile.",
            stats.spool_errors,
        )
        if stats.last_success_s is not None:
            yield GaugeMetricFamily(
                "kafka_pulse_alerts_last_success_timestamp_seconds",
                "Unix time of the last POST Alertmanager accepted.",
                stats.last_success_s,
            )
