"""The canary as a service: threads for producing, consuming, checking brokers, committing and topic upkeep.

`configure` (the constructor) connects to nothing; `start` creates clients and threads; `stop` ends them in
reverse order. Every loop catches what Kafka throws at it, logs it and carries on: a sick cluster is what the
canary is for, so it must never be what stops it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from canary.availability import AvailabilityWindow, BrokerHealth
from canary.commit_probe import CommitProbe
from canary.consumer import Arrival, ConsumerCounts, ProbeConsumer, fetch_brokers
from canary.events import ProbeSink, SinkFanout
from canary.health import HealthBoard
from canary.ledger import Ledger
from canary.metrics import CanaryMetrics, CanarySnapshot
from canary.producer import ProbeProducer
from canary.topic import (
    KafkaPythonReassigner,
    Reassigner,
    TopicManager,
    read_brokers,
    read_layout,
    read_log_offsets,
)
from canary.tracker import Tracker
from canary.view import ClusterView
from pulse.config import CanaryConfig, ClusterConfig
from pulse.errors import KafkaUnavailable
from pulse.kafka.broker_probe import CheckResult, check_broker, tls_context
from pulse.kafka_log import limiter_for
from pulse.lifecycle import Periodic
from pulse.profile import NO_AUTO_CREATE, admin_config

_LOG = logging.getLogger(__name__)
HISTORY_ROUNDS = 600


@dataclass(frozen=True)
class RoundRecord:
    """Availability as judged right after one probe round: what a test or a debugger reads back."""

    round: int
    at_s: float
    """Monotonic time of the round."""
    availability: dict[int, float | None]
    down: frozenset[int]


class CanaryService:
    """One canary instance probing one cluster."""

    def __init__(
        self,
        cluster: ClusterConfig,
        config: CanaryConfig,
        sinks: Iterable[ProbeSink] = (),
        registry: CollectorRegistry | None = None,
        reassigner: Reassigner | None = None,
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.producer_id = uuid.uuid4().hex
        self.view = ClusterView()
        self.registry = registry if registry is not None else CollectorRegistry()
        self.kafka_log = limiter_for(self.registry)
        """Every client's librdkafka lines and errors, thinned and counted (pulse/kafka_log.py)."""
        self._sinks = SinkFanout(sinks)
        self.metrics = CanaryMetrics(
            self.registry, cluster.name, config.client_rack, config.availability_window_s, self._snapshot
        )
        self._sinks.add(self.metrics)
        tracker = Tracker(
            cluster.name,
            config.topic,
            self.producer_id,
            config.client_rack,
            config.loss_deadline_s,
            latency_slo_s=config.latency_slo_s,
        )
        defer_s = config.connection_check_interval_s + config.connection_check_timeout_s + config.interval_s
        window = AvailabilityWindow(config.availability_window_s, config.latency_slo_s, max_defer_s=defer_s)
        self.ledger = Ledger(tracker, window, self._sinks)
        self._reassigner = reassigner or KafkaPythonReassigner(cluster)
        self.history: deque[RoundRecord] = deque(maxlen=HISTORY_ROUNDS)
        self._health = BrokerHealth(frozenset(), as_of=-1.0)
        self._board = HealthBoard()
        self._up: dict[int, bool] = {}
        self._endpoints: dict[int, tuple[str, int]] = {}
        self._fetch_brokers: dict[int, int] = {}
        self._availability: dict[int, float | None] = {}
        self._loops: list[Periodic] = []
        self._checks: ThreadPoolExecutor | None = None
        self._in_flight: dict[int, Future[CheckResult]] = {}
        self._next_round_s = 0.0
        self._lock = threading.Lock()
        self.topic_manager: TopicManager | None = None
        self.producer: ProbeProducer | None = None
        self.consumer: ProbeConsumer | None = None
        self._closest: ProbeConsumer | None = None
        self._commit: CommitProbe | None = None
        self._admin: AdminClient | None = None
        self._topic_admin: AdminClient | None = None
        self._offsets_reader: Consumer | None = None
        """Reads the log's start and end for the log check; never subscribes, joins or commits."""

    # ---- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        config, cluster = self.config, self.cluster
        admin_settings: dict[str, Any] = {
            **admin_config(cluster),
            **self.kafka_log.settings(cluster.name),
            # A hung broker keeps its connection up, and librdkafka may keep asking it for metadata until the
            # socket times out (60 s by default): the view would freeze exactly when attribution needs it.
            "socket.timeout.ms": max(10, int(config.connection_check_timeout_s * 2000)),
            **NO_AUTO_CREATE,
        }
        self._admin = AdminClient({**admin_settings, "client.id": "kafka-pulse-canary-admin"})
        # The topic manager's requests may wait out long timeouts on a dead broker; a client of its own keeps
        # them from delaying the metadata the probes are attributed with.
        self._topic_admin = AdminClient({**admin_settings, "client.id": "kafka-pulse-canary-topic"})
        self.topic_manager = TopicManager(self._topic_admin, self._reassigner, config)
        self._offsets_reader = Consumer(
            {
                **admin_settings,
                "client.id": "kafka-pulse-canary-offsets",
                "group.id": f"kafka-pulse-canary-offsets-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
            }
        )
        log = self.kafka_log
        self.consumer = ProbeConsumer(cluster, config, self.producer_id, self.ledger, kafka_log=log)
        self.producer = ProbeProducer(cluster, config, self.producer_id, self.ledger, self.view, kafka_log=log)
        group = config.commit_group or f"{config.topic}-commit"
        self._commit = CommitProbe(cluster, config.topic, group, config.latency_slo_s, log)
        self._checks = ThreadPoolExecutor(max_workers=8, thread_name_prefix="canary-check")
        self._next_round_s = time.monotonic()
        commits = self._loop("commit", config.interval_s, lambda: self._commit_once(commits.stopping))
        self._loops = [
            # Admin calls that may wait out a dead broker each get a thread, so attribution never waits on them.
            self._loop("topic", config.reconcile_interval_s, self._reconcile_topic),
            self._loop("metadata", config.metadata_refresh_s, self._refresh_metadata, fixed_rate=False),
            self._loop("health", config.connection_check_interval_s, self._check_brokers),
            # The consumers' and producer's polls are their waits: these loops tick without a pause.
            self._loop("consume", 0, self._consume_once),
            self._loop("produce", 0, self._produce_once),
            commits,
            self._loop("log", config.log_check_interval_s, self._check_logs, fixed_rate=False, first_delay_s=True),
        ]
        if config.closest_replica_probe:
            self._closest = ProbeConsumer(
                cluster,
                config,
                self.producer_id,
                None,
                config.client_rack,
                self._closest_arrival,
                self._closest_stats,
                kafka_log=log,
            )
            self._loops.append(self._loop("closest", 0, self._closest_once))
        for loop in self._loops:
            loop.start()

    def stop(self) -> None:
        for loop in self._loops:
            loop.stopping.set()  # all at once, so they wind down together (a commit in flight is cut short)
        for loop in reversed(self._loops):
            loop.stop(15)
        self._loops.clear()
        if self._checks is not None:
            self._checks.shutdown(wait=True, cancel_futures=True)  # a check in flight ends at its timeout
            self._checks = None
        self._in_flight.clear()
        for closer in (self.producer, self.consumer, self._closest, self._commit, self._offsets_reader):
            if closer is not None:
                with contextlib.suppress(Exception):
                    closer.close()

    def add_sink(self, sink: ProbeSink) -> None:
        """One more receiver of the settled probes (the status page keeps each partition's latest); before start."""
        self._sinks.add(sink)

    @property
    def rounds(self) -> int:
        return self.producer.rounds if self.producer is not None else 0

    def availability(self) -> dict[int, float | None]:
        with self._lock:
            return dict(self._availability)

    def broker_up(self) -> dict[int, bool]:
        with self._lock:
            return dict(self._up)

    # ---- loops ---------------------------------------------------------------------------------------

    def _loop(
        self,
        name: str,
        interval_s: float,
        tick: Callable[[], bool | None],
        fixed_rate: bool = True,
        first_delay_s: bool = False,
    ) -> Periodic:
        """A loop of this canary: an unexpected exception is logged and the loop goes on after a pause."""
        delay = interval_s if first_delay_s else 0.0
        return Periodic(
            f"canary-{name}", interval_s, tick, fixed_rate=fixed_rate, first_delay_s=delay, failure_pause_s=1.0
        )

    def _reconcile_topic(self) -> None:
        """Reconcile the monitor topic, in a thread of its own: its admin calls may wait out a dead broker, and
        attribution must not wait with them."""
        assert self.topic_manager is not None
        self.topic_manager.reconcile(time.monotonic())

    def _refresh_metadata(self) -> None:
        """Refresh brokers and the topic's leaders and ISRs; each read on its own, so a broker list that cannot be
        had (DescribeCluster routed to a broker that just died) still lets the leaders and ISRs through."""
        assert self._admin is not None
        timeout_s = self.config.connection_check_timeout_s * 2
        for admin in (self._admin, self._topic_admin):
            if admin is not None:
                admin.poll(0)  # serves their queued librdkafka lines to the limiter, so none pile up unseen
        racks: dict[int, str | None] | None = None
        try:
            brokers = read_brokers(self._admin, timeout_s)
            racks = {b: i.rack for b, i in brokers.items()}
            with self._lock:
                self._endpoints.update({b: (i.host, i.port) for b, i in brokers.items()})
        except KafkaUnavailable as exc:
            _LOG.info("canary broker list refresh failed: %s", exc)
        try:
            layout = read_layout(self._admin, self.config.topic, timeout_s)
            self.view.update(layout, racks, time.monotonic())
        except KafkaUnavailable as exc:
            _LOG.info("canary metadata refresh failed: %s", exc)

    def _check_brokers(self) -> None:
        """Check every broker, publishing each result as it comes: a dead broker (refused at once) must not wait
        for a slow one's check to time out before it is known down."""
        assert self._checks is not None
        context = tls_context(self.cluster)  # per tick, as a bad certificate must not stop the canary's start
        started = time.monotonic()
        with self._lock:
            endpoints = dict(self._endpoints)
        for broker, (host, port) in endpoints.items():
            if broker in self._in_flight and not self._in_flight[broker].done():
                continue  # a hung broker's check is still waiting out its timeout
            timeout_s = self.config.connection_check_timeout_s
            future = self._checks.submit(check_broker, broker, host, port, timeout_s, context)
            future.add_done_callback(functools.partial(self._checked, broker, started))
            self._in_flight[broker] = future

    def _checked(self, broker: int, started_s: float, future: Future[CheckResult]) -> None:
        """Publish one check; one that raised is a failed check, so the broker's last good result never stays."""
        failure = future.exception()
        if failure is not None:
            _LOG.warning("canary connection check of broker %d raised: %r", broker, failure)
            result = CheckResult(broker, False, time.monotonic() - started_s, "error")
        else:
            result = future.result()
        self.metrics.connection_checked(result, self.view.rack(result.broker))
        with self._lock:
            self._up[result.broker] = result.ok
            self._board.record(started_s, result)
            self._health = self._board.view()

    def _consume_once(self) -> None:
        consumer = self.consumer
        assert consumer is not None
        consumer.sync_partitions(self.view.partitions())
        consumer.poll_once(0.1)

    def _closest_once(self) -> None:
        consumer = self._closest
        assert consumer is not None
        consumer.sync_partitions(self.view.partitions())
        consumer.poll_once(0.1)

    def _produce_once(self) -> None:
        """Send a round when one is due, then poll the producer until the next is (at most 50 ms)."""
        producer, consumer = self.producer, self.consumer
        assert producer is not None and consumer is not None
        now = time.monotonic()
        if now >= self._next_round_s:
            readable = consumer.assigned
            producer.send_round(readable.__contains__)
            self._next_round_s = max(self._next_round_s + self.config.interval_s, now)  # skips rounds, never bursts
            # Serve the delivery reports queued while this thread waited first: a probe librdkafka saw acknowledged
            # in time, whose report was not read yet, must not be judged "unacknowledged at the SLO".
            producer.poll(0)
            self._judge(producer.rounds)
        producer.poll(max(0.0, min(0.05, self._next_round_s - time.monotonic())))

    def _check_logs(self) -> bool | None:
        """Each partition's log start and end against the acknowledged offsets (tracker rules 2 and 5): catches
        truncation even while the reader is stuck or nothing new is written. False when the read failed."""
        reader = self._offsets_reader
        assert reader is not None
        timeout_s = self.config.connection_check_timeout_s * 2
        leaders = {p: self.view.leader(p).broker for p in self.view.partitions()}
        if not leaders:
            return None
        asked_s = time.monotonic()
        try:
            starts = read_log_offsets(reader, self.config.topic, leaders, False, timeout_s)
            ends = read_log_offsets(reader, self.config.topic, leaders, True, timeout_s)
        except KafkaUnavailable as exc:
            _LOG.info("canary log check skipped: %s", exc)
            return False
        now = time.monotonic()
        for partition in sorted(starts.keys() & ends.keys()):
            self.ledger.log_checked(partition, starts[partition], ends[partition], asked_s, now)
        return None

    def _commit_once(self, stopping: threading.Event) -> None:
        """One offset commit, cut short by `stopping` (the loop's: `stop` must not wait on a commit)."""
        commit = self._commit
        assert commit is not None
        if self.view.partitions() and (result := commit.commit_once(stopping)) is not None:
            self.metrics.committed(result)

    # ---- helpers -------------------------------------------------------------------------------------

    def _judge(self, round_number: int) -> None:
        now = time.monotonic()
        with self._lock:
            health = self._health
        verdicts = self.ledger.tick(now, health)
        ratios = {b: a.ratio for b, a in verdicts.items()}
        with self._lock:
            self._availability = ratios
        self.history.append(RoundRecord(round_number, now, ratios, health.down))

    def _closest_arrival(self, arrival: Arrival) -> None:
        broker = self._fetch_brokers.get(arrival.partition)
        self.metrics.closest_arrival(arrival.latency_s, broker, self.view.rack(broker) if broker is not None else None)

    def _closest_stats(self, statistics_json: str) -> None:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            self._fetch_brokers = fetch_brokers(statistics_json, self.config.topic)

    def _snapshot(self) -> CanarySnapshot:
        report = self.topic_manager.report if self.topic_manager is not None else None
        with self._lock:
            up, availability = dict(self._up), dict(self._availability)
        consumer = self.consumer
        return CanarySnapshot(
            availability=availability,
            broker_up=up,
            racks=self.view.known_brokers(),
            partitions_led=self.view.partitions_led(),
            partitions=report.partitions if report is not None else 0,
            placement_gaps=len(report.gaps) if report is not None else 0,
            topic_actions=dict(report.actions) if report is not None else {},
            tracker=self.ledger.counts(),
            consumer=consumer.counts if consumer is not None else ConsumerCounts(),
            pending=self.ledger.read(lambda t: t.pending()),
            fetch_brokers=dict(self._fetch_brokers),
            producer_restarts=self.producer.restarts if self.producer is not None else 0,
        )
