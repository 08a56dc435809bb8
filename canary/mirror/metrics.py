"""The `kafka_pulse_canary_mirror_*` families (docs/metrics.md, "Canary mirror"): counters fed per probe result,
and the lag, late copies and partition counts read from a snapshot at scrape time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from canary.events import ProbeResult

PREFIX = "kafka_pulse_canary_mirror"
REPLICATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""5 ms to 5 min: an idle MirrorMaker 2 copies within tens of milliseconds; a stalled one takes minutes."""
_LABELS = ("source_cluster", "target_cluster", "topic", "partition")


@dataclass
class MirrorSnapshot:
    """What the scrape-time families read."""

    lag_s: dict[int, float] = field(default_factory=dict)
    late: dict[int, int] = field(default_factory=dict)
    source_partitions: int | None = None
    target_partitions: int | None = None
    """Partitions of the mirrored topic on the target; 0 when it does not exist, None while the target's
    metadata cannot be read (unknown)."""
    loop_errors: int = 0


class MirrorMetrics:
    """The mirror families on `registry`; `record` is the ProbeSink side (first copies, losses, duplicates)."""

    def __init__(self, registry: CollectorRegistry, source: str, target: str, topic: str) -> None:
        self._base = (source, target, topic)
        self.snapshot = MirrorSnapshot()
        self.latency = Histogram(
            f"{PREFIX}_replication_latency_seconds",
            "Send on the source to first read of the copy on the target, per source partition.",
            _LABELS,
            buckets=REPLICATION_BUCKETS_S,
            registry=registry,
        )
        self.produced = Counter(
            f"{PREFIX}_produced", "Probes acknowledged on the source (late acks included).", _LABELS, registry=registry
        )
        self.produce_errors = Counter(
            f"{PREFIX}_produce_errors",
            "Probes whose produce on the source failed, by librdkafka error name.",
            (*_LABELS, "error"),
            registry=registry,
        )
        self.mirrored = Counter(
            f"{PREFIX}_mirrored", "Probes whose copy was read on the target in time.", _LABELS, registry=registry
        )
        self.lost = Counter(
            f"{PREFIX}_lost",
            "Probes acknowledged on the source and not read on the target within the loss deadline.",
            _LABELS,
            registry=registry,
        )
        self.duplicated = Counter(
            f"{PREFIX}_duplicated", "Extra copies read on the target.", _LABELS, registry=registry
        )
        registry.register(_MirrorCollector(self))

    def record(self, event: ProbeResult) -> None:
        labels = (*self._base, str(event.partition))
        if event.duplicate:
            self.duplicated.labels(*labels).inc()
            return
        if not event.produce_ok:
            self.produce_errors.labels(*labels, event.error or "unknown").inc()
        if event.produce_latency_s is None and not event.consume_ok:
            return  # never acknowledged: there was nothing to mirror
        # Acknowledged (a late ack, `_SLO_EXCEEDED`, included: that record is in the log and gets mirrored).
        self.produced.labels(*labels).inc()
        if event.consume_ok:
            self.mirrored.labels(*labels).inc()
            if event.e2e_latency_s is not None:
                self.latency.labels(*labels).observe(event.e2e_latency_s)
        if event.lost:
            self.lost.labels(*labels).inc()


class _MirrorCollector:
    def __init__(self, metrics: MirrorMetrics) -> None:
        self._m = metrics

    def collect(self) -> Iterator[Metric]:
        base, s = self._m._base, self._m.snapshot
        lag = GaugeMetricFamily(
            f"{PREFIX}_lag_seconds",
            "Age of the oldest probe acknowledged on the source and not yet read on the target (0: none).",
            labels=_LABELS,
        )
        for partition, lag_s in sorted(s.lag_s.items()):
            lag.add_metric((*base, str(partition)), lag_s)
        yield lag
        late = CounterMetricFamily(
            f"{PREFIX}_late", "Copies read on the target after their probe was declared lost.", labels=_LABELS
        )
        for partition, count in sorted(s.late.items()):
            late.add_metric((*base, str(partition)), count)
        yield late
        for name, value, doc in (
            ("source_partitions", s.source_partitions, "Partitions of the monitor topic on the source."),
            ("target_partitions", s.target_partitions, "Partitions of the mirrored topic on the target (0: absent)."),
        ):
            family = GaugeMetricFamily(f"{PREFIX}_{name}", doc + " Absent while unknown.", labels=_LABELS[:3])
            if value is not None:
                family.add_metric(base, value)
            yield family
        errors = CounterMetricFamily(
            f"{PREFIX}_loop_errors", "Unexpected errors caught in the mirror loops.", labels=_LABELS[:3]
        )
        errors.add_metric(base, s.loop_errors)
        yield errors
