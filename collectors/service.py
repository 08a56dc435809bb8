"""The collectors as one service: configured from the config file, started, registered, stopped.

Follows the module lifecycle of the style guide: the constructor validates and connects to nothing; `start`
opens transports and starts the scrape threads; `stop` ends them. `kafka-pulse collect` and `kafka-pulse run`
both compose it with an HTTP listener.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from collectors.catalogue import TopicSelection, scrape_plan
from collectors.clients import client_scraper
from collectors.cluster_quorum import fetch_quorum
from collectors.cluster_state import (
    BASE_TIMEOUT_S,
    ClusterHealth,
    ClusterSnapshot,
    assess,
    fetch_earliest_local,
    fetch_elr,
    fetch_racks,
    fetch_snapshot,
    read_attempt_s,
)
from collectors.collector import CLIENT_HEALTH, ClusterStateCollector, JmxCollector
from collectors.mapping import BrokerIdentity
from collectors.scrapers import BrokerScraper, PeriodicScraper
from collectors.shard import Shard, plan_shard
from collectors.shard_metrics import ShardCollector
from collectors.slow_broker import ExtraSignals, SlowBrokerCollector, SlowBrokerDetector
from collectors.transport import open_transport
from pulse.broker_health import BrokerHealthBoard
from pulse.config import ClusterConfig, CollectorsConfig, SlowBrokersConfig
from pulse.kafka_log import KafkaLogLimiter, limiter_for
from pulse.lifecycle import Part
from pulse.profile import admin_config

ADMIN_TIMEOUT_S = 10.0
STALE_INTERVALS = 3
"""A cluster-state read older than this many scrape intervals is not current (`cluster_snapshot`)."""
NOT_READ_HERE = "the collectors of this process do not read its cluster state"
"""`cluster_snapshot`'s answer for a cluster another shard reads: nothing to judge here, not a failure."""


def topic_selection(config: CollectorsConfig) -> TopicSelection:
    return TopicSelection(
        per_topic=config.topic_metrics in ("topic", "partition"),
        per_partition=config.topic_metrics == "partition",
        allow=config.topic_allow,
        deny=config.topic_deny,
    )


class CollectorService:
    """JMX scrapers for every configured broker and client target, and one Admin API scraper per cluster."""

    def __init__(
        self,
        clusters: Sequence[ClusterConfig],
        config: CollectorsConfig,
        slow_brokers: SlowBrokersConfig | None = None,
        board: BrokerHealthBoard | None = None,
        extra_signals: ExtraSignals | None = None,
    ) -> None:
        """`slow_brokers` (on unless disabled) adds a slow-broker detector per cluster with JMX whose state this
        process reads, publishing to `board`; `extra_signals` are the application layer's (the canary's)."""
        self.slow_brokers = slow_brokers or SlowBrokersConfig()
        self.board = board or BrokerHealthBoard()
        self.extra_signals = extra_signals
        self.detectors: dict[str, SlowBrokerDetector] = {}
        self.clusters = list(clusters)
        self.config = config
        self.selection = topic_selection(config)
        self.plan = scrape_plan(self.selection)
        self.racks: dict[tuple[str, int], str | None] = {}
        """Rack per (cluster, broker), learnt from the Admin API; JMX samples are labelled with it."""
        self.brokers: dict[tuple[str, int], BrokerScraper] = {}
        self.clients: dict[str, BrokerScraper] = {}
        """Client targets (`collectors.clients`) by name."""
        self.states: dict[str, PeriodicScraper[ClusterHealth]] = {}
        self._snapshots: dict[str, ClusterSnapshot] = {}
        """Each cluster's latest cluster-state read (replaced whole): what the status page judges."""
        self.rack_reads: dict[str, PeriodicScraper[dict[int, str | None]]] = {}
        """Clusters whose state another shard exports but some of whose brokers this shard scrapes: racks only."""
        self._admins: list[AdminClient] = []
        self.kafka_log = KafkaLogLimiter()
        """librdkafka's lines and errors of the Admin clients; `register` swaps in the registry's shared one."""
        configured = {c.name: [b.broker_id for b in c.jmx.brokers] if c.jmx is not None else [] for c in self.clusters}
        self.shard_plan = plan_shard(
            Shard(config.shard.index, config.shard.count), configured, [c.name for c in config.clients]
        )
        """What this shard scrapes (collectors/shard.py); with the default single shard, everything."""

    def start(self) -> None:
        owned = set(self.shard_plan.brokers)
        for cluster in self.clusters:
            jmx = cluster.jmx
            mine = [b for b in jmx.brokers if (cluster.name, b.broker_id) in owned] if jmx is not None else []
            if cluster.name in self.shard_plan.cluster_states:
                self.states[cluster.name] = self._state_scraper(cluster)
            elif mine:
                self.rack_reads[cluster.name] = self._rack_reader(cluster)
            if jmx is None:
                continue
            for broker in mine:
                transport = open_transport(self.config.transport, broker, jmx)
                self.brokers[(cluster.name, broker.broker_id)] = BrokerScraper(
                    self._identity(cluster.name, broker.broker_id),
                    transport,
                    self.plan,
                    self.selection,
                    self.config.scrape_interval_s,
                )
        for index, client in enumerate(self.config.clients):
            if client.name not in self.shard_plan.clients:
                continue
            self.clients[client.name] = client_scraper(
                client, self.config.transport, self.selection, self.config.scrape_interval_s, index
            )
        # Cluster state first: its first result brings the racks the JMX samples are labelled with.
        for state in self.admin_scrapers():
            state.scrape_once()
            state.start()
        for scraper in (*self.brokers.values(), *self.clients.values()):
            scraper.start()
        self._start_detectors()

    def _start_detectors(self) -> None:
        for cluster in self.clusters:
            if not self.slow_brokers.enabled or cluster.jmx is None or cluster.name not in self.states:
                continue
            ids = sorted(b.broker_id for b in cluster.jmx.brokers)
            scrapers = {b: s for (c, b), s in self.brokers.items() if c == cluster.name}
            logs = self.kafka_log.settings(cluster.name)
            detector = SlowBrokerDetector(
                cluster, ids.copy, scrapers, self.slow_brokers, self.board, self.extra_signals, logs
            )
            self.detectors[cluster.name] = detector
            detector.start()

    def admin_scrapers(self) -> list[PeriodicScraper[Any]]:
        """Every Admin API read this shard runs: the cluster states it exports and the rack reads for the rest."""
        return [*self.states.values(), *self.rack_reads.values()]

    def _identity(self, cluster: str, broker: int) -> Callable[[], BrokerIdentity]:
        def identity() -> BrokerIdentity:
            return BrokerIdentity(cluster, broker, self.racks.get((cluster, broker)))

        return identity

    def _admin(self, cluster: ClusterConfig) -> AdminClient:
        settings: dict[str, Any] = {
            **admin_config(cluster),
            "client.id": "kafka-pulse-collect",
            **self.kafka_log.settings(cluster.name),
        }
        admin = AdminClient(settings)
        self._admins.append(admin)
        return admin

    def _rack_reader(self, cluster: ClusterConfig) -> PeriodicScraper[dict[int, str | None]]:
        admin = self._admin(cluster)

        def scrape() -> dict[int, str | None]:
            admin.poll(0)  # serves its queued librdkafka lines to the limiter
            racks = fetch_racks(admin, cluster.name, min(ADMIN_TIMEOUT_S, self.config.scrape_interval_s * 2))
            for broker, rack in racks.items():
                self.racks[(cluster.name, broker)] = rack
            return racks

        return PeriodicScraper(f"cluster {cluster.name} racks", scrape, self.config.scrape_interval_s)

    def _state_scraper(self, cluster: ClusterConfig) -> PeriodicScraper[ClusterHealth]:
        reads = KeptClient(lambda: self._admin(cluster), self._admins.remove)
        expected = {b.broker_id for b in cluster.jmx.brokers} if cluster.jmx is not None else set()
        unanswered: set[int] = set()
        """Brokers that did not answer the latest DescribeQuorum asked of them: asked last (`fetch_quorum`)."""

        def scrape() -> ClusterHealth:
            reads.release_retired()
            admin = reads.client
            admin.poll(0)  # serves its queued librdkafka lines to the limiter (pulse/kafka_log.py)
            previous = self._snapshots.get(cluster.name)
            partitions = len(previous.partitions) if previous is not None else 0
            attempt_s = read_attempt_s(self.config.admin_timeout_s, partitions, reads.took_s)
            started, reads.took_s = time.monotonic(), None
            # Default (None): the time limit grows with the partitions the read's metadata lists.
            snapshot = fetch_snapshot(admin, cluster.name, self.config.admin_timeout_s, reads.renew, attempt_s)
            reads.took_s = time.monotonic() - started
            snapshot = fetch_elr(cluster, snapshot, self.config.admin_timeout_s or BASE_TIMEOUT_S)
            snapshot = fetch_quorum(cluster, snapshot, self.config.admin_timeout_s or BASE_TIMEOUT_S, unanswered)
            snapshot = fetch_earliest_local(cluster, snapshot, self.config.admin_timeout_s or BASE_TIMEOUT_S)
            self._snapshots[cluster.name] = snapshot
            for broker, rack in snapshot.brokers.items():
                self.racks[(cluster.name, broker)] = rack
            expected.update(snapshot.brokers)  # a broker once seen stays expected: its absence is news
            return assess(snapshot, expected)

        return PeriodicScraper(f"cluster {cluster.name} state", scrape, self.config.scrape_interval_s)

    def cluster_snapshot(self, cluster: str, now_s: float | None = None) -> ClusterSnapshot | str:
        """`cluster`'s latest cluster-state read (the status page judges brokers and partitions from it, with no
        client of its own), or why there is none: not read by this shard, not yet, failed, or older than 3 scrape
        intervals (a read held by a hung broker)."""
        scraper = self.states.get(cluster)
        if scraper is None:
            return NOT_READ_HERE
        result = scraper.result
        snapshot = self._snapshots.get(cluster)
        if result is None or snapshot is None:
            return "the collectors have not read its cluster state yet"
        if not result.ok:
            return f"the collectors' latest cluster-state read failed: {result.error}"
        age_s = (time.time() if now_s is None else now_s) - result.finished_s
        if age_s > STALE_INTERVALS * scraper.interval_s:
            return f"the collectors' latest cluster-state read is {age_s:.0f} s old"
        return snapshot

    def register(self, registry: CollectorRegistry) -> None:
        self.kafka_log = limiter_for(registry)  # before start() builds the clients
        registry.register(JmxCollector(self.brokers))
        registry.register(JmxCollector(self.clients, CLIENT_HEALTH))
        registry.register(ClusterStateCollector(self.states))
        registry.register(ShardCollector(self.shard_plan))
        registry.register(SlowBrokerCollector(self.detectors))

    def stop(self) -> None:
        for detector in self.detectors.values():
            detector.stop()
        for scraper in (*self.brokers.values(), *self.clients.values()):
            scraper.stop()
        for state in self.admin_scrapers():
            state.stop()


class KeptClient:
    """The Admin client of one cluster's state reads: `renew` puts a fresh one in its place when a read waits on a
    hung broker (`fetch_snapshot`); the replaced ones are dropped at the next read, off its thread."""

    def __init__(self, make: Callable[[], AdminClient], forget: Callable[[AdminClient], None]) -> None:
        self._make = make
        self._forget = forget
        self.client = make()
        self.took_s: float | None = None
        """How long the latest `fetch_snapshot` took; None after a failed one (`read_attempt_s`)."""
        self._retired: list[AdminClient] = []

    def renew(self) -> AdminClient:
        self._retired.append(self.client)
        self._forget(self.client)
        self.client = self._make()
        return self.client

    def release_retired(self) -> None:
        """Drop the replaced clients on a thread of their own, where they are destroyed: destroying one joins its
        broker threads, and the thread of a hung broker may hold it. Called between reads, so the read that
        retired them has returned and this list holds their last references."""
        if not self._retired:
            return
        batch, self._retired = self._retired, []
        threading.Thread(target=batch.clear, name="kafka-pulse-release-admin", daemon=True).start()


def build_collectors(
    clusters: Sequence[ClusterConfig],
    config: CollectorsConfig,
    registry: CollectorRegistry,
    slow_brokers: SlowBrokersConfig | None = None,
    board: BrokerHealthBoard | None = None,
    extra_signals: ExtraSignals | None = None,
) -> list[Part]:
    """The collectors built from config, their families on `registry`, not started: the one way `kafka-pulse
    collect` and `kafka-pulse run` get them."""
    service = CollectorService(clusters, config, slow_brokers, board, extra_signals)
    service.register(registry)
    jmx = sum(len(c.jmx.brokers) for c in clusters if c.jmx is not None)
    what = f"{jmx} JMX brokers over {config.transport}" if jmx else "Admin API only (no jmx.brokers)"
    plan = service.shard_plan
    if not plan.shard.is_whole:
        what = (
            f"shard {plan.shard.index} of {plan.shard.count}: {len(plan.brokers)} of {what}, "
            f"cluster state of {len(plan.cluster_states)} of {len(clusters)} clusters"
        )
    clients = f", {len(config.clients)} client targets" if config.clients else ""
    slow = service.slow_brokers
    detect = f", slow-broker detection every {slow.interval_s:g} s" if jmx and slow.enabled else ""
    return [Part("collectors", service, f"{what}{clients}, every {config.scrape_interval_s:g} s{detect}")]
