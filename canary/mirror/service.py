"""The mirror canary's runner: `MirrorCanary` produces on the source and reads MirrorMaker's copy on the target,
one thread each; `configure_mirror` builds it from the config."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Self

from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from canary.availability import AvailabilityWindow, BrokerHealth
from canary.consumer import ProbeConsumer
from canary.events import ProbeSink, SinkFanout
from canary.mirror.ledger import MirrorLag, MirrorLedger
from canary.mirror.metrics import MirrorMetrics
from canary.producer import ProbeProducer
from canary.sli_log import PublishedProbes, SliLog, TargetTagged
from canary.topic import KafkaPythonReassigner, Reassigner, TopicManager, read_brokers, read_layout
from canary.tracker import Tracker
from canary.view import ClusterView
from pulse.config import CanaryConfig, ClusterConfig, PulseConfig
from pulse.errors import ConfigError, KafkaUnavailable
from pulse.kafka_log import limiter_for
from pulse.profile import admin_config
from pulse.sli_sink import SliPublisher

_LOG = logging.getLogger(__name__)


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
    config: PulseConfig,
    registry: CollectorRegistry,
    sli_log: SliLog | None,
    probed: ClusterConfig,
    sli_sink: SliPublisher | None = None,
) -> MirrorCanary | None:
    """Mirror mode when `canary.mirror.enabled`, not started yet, so a bad cluster name stops the CLI before
    anything runs. The source defaults to `probed`, the cluster the canary itself probes; with `sli_sink` the
    results are published to Kafka too, tagged with the target cluster."""
    mirror = config.canary.mirror
    if not mirror.enabled or mirror.target is None:
        return None
    source = probed if mirror.source is None else _named_cluster(config, mirror.source, "source")
    target = _named_cluster(config, mirror.target, "target")
    if source.name == target.name:
        raise ConfigError(f"canary.mirror.target: {target.name!r} is also the source; mirror mode needs two clusters")
    sinks = [PublishedProbes(sli_sink, target.name)] if sli_sink is not None else []
    return MirrorCanary(source, target, config.canary, registry, sli_log=sli_log, sinks=sinks)


def _named_cluster(config: PulseConfig, name: str, key: str) -> ClusterConfig:
    try:
        return config.cluster(name)
    except ConfigError as exc:
        raise ConfigError(f"canary.mirror.{key}: {exc}") from None
