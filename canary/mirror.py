"""Mirror mode (chapter 10's mirror canary; Pinterest's Shallow Mirror and Kuaishou's trillion-scale Kafka write-ups):
probes are produced on the source cluster's monitor topic and read back from MirrorMaker's copy on the target cluster.

The core canary's producer, consumer, tracker and ledger do the probing; this module adds what only a mirror has:
replication latency (target receive time minus source send time, one process so one monotonic clock) and loss per
source partition, the replication lag (age of the oldest acknowledged probe not yet on the target), and the
`kafka_pulse_canary_mirror_*` families (docs/metrics.md, "Canary mirror").
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Self

from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from canary.availability import AvailabilityWindow, BrokerHealth
from canary.consumer import ProbeConsumer
from canary.events import ProbeResult, ProbeSink, SinkFanout
from canary.ledger import Ledger
from canary.producer import ProbeProducer
from canary.sli_log import SliLog, TargetTagged
from canary.topic import KafkaPythonReassigner, Reassigner, TopicManager, read_brokers, read_layout
from canary.tracker import Tracker
from canary.view import ClusterView, PartitionLeader
from pulse.config import CanaryConfig, ClusterConfig, PulseConfig
from pulse.errors import ConfigError, KafkaUnavailable
from pulse.kafka_log import limiter_for
from pulse.profile import admin_config

_LOG = logging.getLogger(__name__)

PREFIX = "kafka_pulse_canary_mirror"
REPLICATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""5 ms to 5 min: an idle MirrorMaker 2 copies within tens of milliseconds; a stalled one takes minutes."""
_LABELS = ("source_cluster", "target_cluster", "topic", "partition")


# ---- replication lag (pure) ---------------------------------------------------------------------------------


@dataclass
class _Pending:
    sent_s: float
    acked: bool = False


@dataclass
class MirrorLag:
    """Probes acknowledged on the source and not yet read on the target, per source partition (pure; the clock is
    an argument). Unlike the tracker it does not settle a probe at the loss deadline: a late copy still ends the
    lag, so the lag grows for as long as the mirror is stalled and falls once it catches up.

    Rules:
      1. lag(p) = now - send time of the oldest acknowledged, unread probe of p; 0 when there is none.
      2. A failed produce never counts (it cannot be mirrored); a read before the acknowledgement ends the probe.
      3. A probe unread after `retain_s` is forgotten (counted in `given_up`), bounding memory through long outages.
    """

    retain_s: float
    _probes: dict[int, dict[int, _Pending]] = field(default_factory=dict)
    given_up: int = 0

    def sent(self, partition: int, sequence: int, now: float) -> None:
        self._probes.setdefault(partition, {})[sequence] = _Pending(now)

    def acked(self, partition: int, sequence: int) -> None:
        probe = self._probes.get(partition, {}).get(sequence)
        if probe is not None:
            probe.acked = True

    def ended(self, partition: int, sequence: int) -> None:
        """The probe failed, or its copy was read on the target (rule 2)."""
        self._probes.get(partition, {}).pop(sequence, None)

    def lag_s(self, now: float) -> dict[int, float]:
        """Rule 1 for every partition probed so far; probes are kept in send order, so the first acked is oldest."""
        lags: dict[int, float] = {}
        for partition, probes in self._probes.items():
            oldest = next((p.sent_s for p in probes.values() if p.acked), None)
            lags[partition] = 0.0 if oldest is None else max(0.0, now - oldest)
        return lags

    def forget(self, now: float) -> None:
        """Rule 3; probes are kept in send order, so the scan stops at the first young one."""
        for probes in self._probes.values():
            old = []
            for sequence, probe in probes.items():
                if now - probe.sent_s <= self.retain_s:
                    break
                old.append(sequence)
            for sequence in old:
                del probes[sequence]
            self.given_up += len(old)


class MirrorLedger(Ledger):
    """The core ledger, also telling `MirrorLag` what the producer and the target consumer saw."""

    def __init__(self, tracker: Tracker, window: AvailabilityWindow, sinks: SinkFanout, lag: MirrorLag) -> None:
        super().__init__(tracker, window, sinks)
        self.lag = lag
        self._lag_lock = threading.Lock()

    def sent(self, partition: int, sequence: int, now: float, sent_at: datetime, leader: PartitionLeader) -> None:
        super().sent(partition, sequence, now, sent_at, leader)
        with self._lag_lock:
            self.lag.sent(partition, sequence, now)

    def acked(self, partition: int, sequence: int, offset: int, latency_s: float, now: float) -> None:
        super().acked(partition, sequence, offset, latency_s, now)
        with self._lag_lock:
            self.lag.acked(partition, sequence)

    def failed(self, partition: int, sequence: int, error: str, now: float) -> None:
        super().failed(partition, sequence, error, now)
        with self._lag_lock:
            self.lag.ended(partition, sequence)

    def arrived(self, partition: int, sequence: int, offset: int, now: float) -> None:
        super().arrived(partition, sequence, offset, now)
        with self._lag_lock:
            self.lag.ended(partition, sequence)

    def lag_s(self, now: float) -> dict[int, float]:
        with self._lag_lock:
            self.lag.forget(now)
            return self.lag.lag_s(now)


# ---- metrics ------------------------------------------------------------------------------------------------


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


# ---- the runner ---------------------------------------------------------------------------------------------


class MirrorCanary:
    """Produces on `source`, reads the copy on `target`; two threads, stopped by `stop`. Kafka errors are counted
    and retried, never raised out of the loops."""

    def __init__(
        self,
        source: ClusterConfig,
        target: ClusterConfig,
        canary: CanaryConfig,
        registry: CollectorRegistry,
        sli_log: SliLog | None = None,
        sinks: Iterable[ProbeSink] = (),
        reassigner: Reassigner | None = None,
    ) -> None:
        mirror = canary.mirror
        self.source, self.target = source, target
        self.topic = mirror.topic
        self.mirrored_topic = mirror.mirrored_topic(source.name)
        self.producer_id = uuid.uuid4().hex
        # The core's components read their topic and deadlines from a CanaryConfig: give them the mirror's.
        self._config = canary.model_copy(update={"topic": mirror.topic, "loss_deadline_s": mirror.loss_deadline_s})
        self.metrics = MirrorMetrics(registry, source.name, target.name, mirror.topic)
        self.kafka_log = limiter_for(registry)
        fanout = SinkFanout([self.metrics, *sinks])
        if sli_log is not None:
            fanout.add(TargetTagged(sli_log, target.name))
        # A stalled mirror delivers its backlog minutes late: remember probes long enough to call those copies
        # late (not unknown) and to keep measuring the lag until they come.
        retain_s = max(600.0, 10 * mirror.loss_deadline_s)
        tracker = Tracker(
            source.name, mirror.topic, self.producer_id, canary.client_rack, mirror.loss_deadline_s, retain_s
        )
        window = AvailabilityWindow(canary.availability_window_s, canary.latency_slo_s, canary.latency_slo_s)
        self.ledger = MirrorLedger(tracker, window, fanout, MirrorLag(retain_s))
        self.view = ClusterView()
        self._reassigner = reassigner or KafkaPythonReassigner(source)
        self._source_admin: AdminClient | None = None
        self._target_admin: AdminClient | None = None
        self._topics: TopicManager | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._producer: ProbeProducer | None = None
        self._consumer: ProbeConsumer | None = None

    def start(self) -> Self:
        """Create the clients and start both loops; nothing before this connects to Kafka."""
        log = self.kafka_log
        self._source_admin = AdminClient({**admin_config(self.source), **log.settings(self.source.name)})
        self._target_admin = AdminClient({**admin_config(self.target), **log.settings(self.target.name)})
        self._topics = TopicManager(self._source_admin, self._reassigner, self._config)
        target_config = self._config.model_copy(update={"topic": self.mirrored_topic})
        self._producer = ProbeProducer(
            self.source, self._config, self.producer_id, self.ledger, self.view, kafka_log=log
        )
        self._consumer = ProbeConsumer(self.target, target_config, self.producer_id, self.ledger, kafka_log=log)
        for name, loop in (("mirror-produce", self._produce_loop), ("mirror-consume", self._consume_loop)):
            thread = threading.Thread(target=self._guarded, args=(loop,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads.clear()
        if self._producer is not None:
            self._producer.close()
        if self._consumer is not None:
            self._consumer.close()

    # ---- loops --------------------------------------------------------------------------------------------

    def _guarded(self, loop: Callable[[], None]) -> None:
        """Run a loop until stop; an unexpected error is logged, counted and the loop resumed after a pause."""
        while not self._stopping.is_set():
            try:
                loop()
                return
            except Exception:
                self.metrics.snapshot.loop_errors += 1
                _LOG.exception("canary mirror %s -> %s: loop failed; resuming", self.source.name, self.target.name)
                self._stopping.wait(1.0)

    def _produce_loop(self) -> None:
        config, producer, consumer, topics = self._config, self._producer, self._consumer, self._topics
        assert producer is not None and consumer is not None and topics is not None
        next_round = next_refresh = next_reconcile = time.monotonic()
        while not self._stopping.is_set():
            now = time.monotonic()
            if now >= next_reconcile:
                if config.manage_topic:
                    topics.reconcile(now)
                next_reconcile = now + config.reconcile_interval_s
            if now >= next_refresh:
                self._refresh_source()
                next_refresh = now + config.metadata_refresh_s
            if now >= next_round:
                # Only partitions whose copy is already read on the target: a probe copied before its reader
                # started would be missed and look lost.
                producer.send_round(consumer.assigned.__contains__)
                self.ledger.tick(now, BrokerHealth(frozenset(), now))
                self._update_snapshot(now)
                next_round += config.interval_s
                if next_round < now:  # fell behind (a slow metadata call): skip rounds rather than burst
                    next_round = now + config.interval_s
            producer.poll(max(0.0, min(0.05, next_round - time.monotonic())))

    def _consume_loop(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        next_refresh = time.monotonic()
        while not self._stopping.is_set():
            if time.monotonic() >= next_refresh:
                self._refresh_target(consumer)
                next_refresh = time.monotonic() + self._config.metadata_refresh_s
            consumer.poll_once(0.1)

    def _refresh_source(self) -> None:
        assert self._source_admin is not None
        self._source_admin.poll(0)  # serves its queued librdkafka lines to the limiter
        try:
            racks = read_brokers(self._source_admin, 5.0)
            layout = read_layout(self._source_admin, self.topic, 5.0)
        except KafkaUnavailable as exc:
            _LOG.warning("canary mirror: source %s: %s", self.source.name, exc)
            self.metrics.snapshot.source_partitions = None
            return
        self.view.update(layout, {broker: info.rack for broker, info in racks.items()})
        self.metrics.snapshot.source_partitions = len(layout.replicas) if layout is not None else 0

    def _refresh_target(self, consumer: ProbeConsumer) -> None:
        """Assign the mirrored topic's partitions as MirrorMaker creates them."""
        assert self._target_admin is not None
        self._target_admin.poll(0)  # serves its queued librdkafka lines to the limiter
        try:
            layout = read_layout(self._target_admin, self.mirrored_topic, 5.0)
        except KafkaUnavailable as exc:
            _LOG.warning("canary mirror: target %s: %s", self.target.name, exc)
            self.metrics.snapshot.target_partitions = None
            return
        self.metrics.snapshot.target_partitions = len(layout.replicas) if layout is not None else 0
        if layout is not None:
            consumer.sync_partitions(sorted(layout.replicas))

    def _update_snapshot(self, now: float) -> None:
        snapshot = self.metrics.snapshot
        snapshot.lag_s = self.ledger.lag_s(now)
        snapshot.late = {p: c.late for p, c in self.ledger.counts().items()}


def configure_mirror(
    config: PulseConfig, registry: CollectorRegistry, sli_log: SliLog | None, probed: ClusterConfig
) -> MirrorCanary | None:
    """Mirror mode when `canary.mirror.enabled`, not started yet, so a bad cluster name stops the CLI before
    anything runs. The source defaults to `probed`, the cluster the canary itself probes."""
    mirror = config.canary.mirror
    if not mirror.enabled or mirror.target is None:
        return None
    source = probed if mirror.source is None else _named_cluster(config, mirror.source, "source")
    target = _named_cluster(config, mirror.target, "target")
    if source.name == target.name:
        raise ConfigError(f"canary.mirror.target: {target.name!r} is also the source; mirror mode needs two clusters")
    return MirrorCanary(source, target, config.canary, registry, sli_log=sli_log)


def _named_cluster(config: PulseConfig, name: str, key: str) -> ClusterConfig:
    try:
        return config.cluster(name)
    except ConfigError as exc:
        raise ConfigError(f"canary.mirror.{key}: {exc}") from None
