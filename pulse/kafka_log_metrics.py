"""`kafka_pulse_librdkafka_logs_total`: the lines pulse/kafka_log.py's limiter logged and suppressed, on the /metrics
of the process part whose registry `limiter_for` was given. Apart from the limiter, so a short-lived client's
process (`check`) does not import prometheus_client."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from pulse.names import LIBRDKAFKA_LOGS_METRIC

Counts = Mapping[tuple[str, str, str], int]
"""(cluster, kind, outcome: logged|suppressed) -> lines, as the limiter's `snapshot` gives them."""


class KafkaLogCollector(Collector):
    """Exports a limiter's counts; it takes the limiter's `snapshot`, not the limiter, so the limiter's module
    (imported by every client, `check` included) is the only one that knows both."""

    def __init__(self, snapshot: Callable[[], Counts]) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            LIBRDKAFKA_LOGS_METRIC,
            "librdkafka log lines and errors by cluster and kind; suppressed ones were only counted (one a minute "
            "per kind is logged).",
            labels=["cluster", "kind", "outcome"],
        )
        for (cluster, kind, outcome), count in sorted(self.snapshot().items()):
            family.add_metric([cluster, kind, outcome], count)
        yield family
