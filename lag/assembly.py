"""The lag evaluator as a service: one `LagService` for every configured cluster, each cluster's source (the HWM
rounds of `ingest/hwm.py` plus commits from `ingest/offsets_topic.py` or the Admin API's `ingest/admin_source.py`,
one loop each), its page-cache estimate, exact-time-lag readers, the Burrow v3 routes and lag's families, and the
notifier, composed from the config. Started in Burrow's order (things taking requests first: the command's listener,
then sources, then what reads them: the estimates, the notifier) and stopped in reverse.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prometheus_client import CollectorRegistry

from lag.diagnose.page_cache import PageCacheEstimator
from lag.ingest.admin_clients import AdminClients, new_admin_client
from lag.ingest.admin_source import GROUP_OFFSETS_FEED, WAIT_S, AdminOffsetsReader
from lag.ingest.exact_lag import ExactLagFetcher
from lag.ingest.group_type_poller import GroupTypePoller
from lag.ingest.hwm import HwmPoller
from lag.ingest.offsets_topic import COMMITS_FEED, OffsetsTopicReader
from lag.notify.incidents import LagNotifier, LagNotifierCollector
from lag.protocol import MetadataReading, Status
from lag.serve.burrow_json import (
    BurrowModules,
    Json,
    alertmanager_notifier_json,
    client_profile_json,
    cluster_module_json,
    consumer_module_json,
)
from lag.serve.metrics import LagCollector
from lag.serve.routes import BurrowApi
from lag.serve.share_groups import ShareGroupApi, ShareGroupCollector
from lag.serve.streams_groups import StreamsGroupApi, StreamsGroupCollector
from lag.service import LagService
from lag.store.access import LagWriter
from lag.store.freshness import SourceHealth, wall_clock_ms
from lag.store.share_board import ShareBoard
from lag.store.streams_board import StreamsBoard
from pulse.alerts import AlertSender
from pulse.broker_health import BrokerHealthBoard
from pulse.config import ClusterConfig, PulseConfig
from pulse.kafka.group_offsets import GroupOffsetsReader
from pulse.kafka.share_groups import ShareGroupReader
from pulse.kafka.streams_groups import StreamsGroupReader
from pulse.kafka_log import limiter_for
from pulse.lifecycle import Periodic
from pulse.paths import state_dir
from pulse.profile import client_config, kafka_python_config

if TYPE_CHECKING:
    from lag.notify.evaluation_log import EvaluationLog
    from pulse.sli_sink import SliPublisher

_LOG = logging.getLogger(__name__)
CLIENT_ID = "kafka-pulse-lag"
SHARE_CLIENT_ID = "kafka-pulse-lag-share"
STREAMS_CLIENT_ID = "kafka-pulse-lag-streams"
Ingestion = Literal["consumer_offsets", "admin"]


class KafkaLagSource:
    """One cluster's ingestion: its HWM rounds plus one commits reader, `__consumer_offsets` or the Admin API, each
    a loop on a thread of its own. Configuring it connects to nothing (Burrow's module contract)."""

    def __init__(
        self,
        cluster: str,
        client_config: dict[str, Any],
        service: LagWriter,
        health: SourceHealth,
        ingestion: Ingestion = "consumer_offsets",
        offsets_settings: Mapping[str, Any] | None = None,
    ) -> None:
        """`offsets_settings`: pulse.profile.kafka_python_config of the cluster, for admin ingestion's committed
        offsets (pulse/kafka/group_offsets.py); required with it."""
        if ingestion == "admin" and offsets_settings is None:
            raise ValueError(f"lag source {cluster!r}: admin ingestion needs the kafka-python settings")
        self.offsets_settings = dict(offsets_settings or {})
        self.cluster = cluster
        self.client_config = dict(client_config)
        self.service = service
        self.health = health
        self.ingestion = ingestion
        self.hwm = HwmPoller(cluster, client_config, service, health)
        self.offsets = OffsetsTopicReader(cluster, client_config, service, health)
        self.hwm.topic_ids_for = self.offsets  # consumer-protocol owners wait for topic ids the HWM rounds read
        self.decoded = self.offsets.decoded
        """Records read from __consumer_offsets by decoded kind (the reader's own counter)."""
        self.admin_reader: AdminOffsetsReader | None = None
        self.streams_groups: Callable[[], Mapping[str, int]] | None = None
        """The cluster's streams groups and member counts, for admin ingestion (its listing leaves them out); set
        before `start` when streams groups are described."""
        self._stop = threading.Event()
        """Ends the `__consumer_offsets` reader: a continuous consume loop whose crash marks its feed stopped."""
        self._loops: list[Periodic | threading.Thread] = []
        # Judged only while commits can be read too.
        health.expect(cluster, GROUP_OFFSETS_FEED if ingestion == "admin" else COMMITS_FEED)

    def start(self) -> None:
        self.hwm.poll_hwms()  # commits are only stored once their partition has a HWM (Burrow's rule)
        settings, name = self.service.settings, f"lag-{self.cluster}"
        # HWM rounds start `offset_refresh_s` apart, counted from the previous round's start (fixed rate): a round
        # that takes most of the interval (10,000 partitions on a loaded host) must not push the next past
        # `stale_after_s`.
        refresh_s = settings.offset_refresh_s
        self._loops = [Periodic(f"{name}-hwm", refresh_s, self.hwm.poll_hwms, first_delay_s=refresh_s)]
        if self.ingestion == "admin":
            clients = AdminClients(lambda: new_admin_client(self.client_config))
            offsets = GroupOffsetsReader(self.offsets_settings)
            self.admin_reader = AdminOffsetsReader(
                self.cluster, clients, offsets, self.service, self.health, self.streams_groups
            )
            self.admin_reader.poll()
            group_s = settings.effective_group_refresh_s()
            poll = self.admin_reader.poll_renewing
            self._loops.append(Periodic(f"{name}-admin", group_s, poll, fixed_rate=False, first_delay_s=group_s))
        else:
            self._loops.append(
                threading.Thread(target=self.offsets.run, args=(self._stop,), name=f"{name}-offsets", daemon=True)
            )
        for loop in self._loops:
            loop.start()

    def stop(self) -> None:
        """Stops the loops, then closes the HWM reader (`HwmPoller.close` says why)."""
        self._stop.set()
        for loop in self._loops:
            if isinstance(loop, Periodic):
                loop.stop(timeout_s=0)  # only asks: every loop is told before any is waited for
        for loop in reversed(self._loops):
            if isinstance(loop, Periodic):
                loop.stop(timeout_s=10)
            else:
                loop.join(timeout=10)
        if any(loop.is_alive() for loop in self._loops):
            return  # a read still in progress owns the reader; closing it under that read is unsafe
        self.hwm.close()
        if self.admin_reader is not None:
            self.admin_reader.close()


class SwitchInterval:
    """`lag.switch_interval_s` applied to the interpreter while lag runs and the previous interval restored on stop:
    a thread decoding commits holds the interpreter lock until another thread has waited this long for it, so it
    bounds how long an API request waits behind ingestion (docs/benchmarks.md, status while ingesting)."""

    def __init__(self, interval_s: float | None) -> None:
        """None: the interpreter's interval is left as it is."""
        self.interval_s = interval_s
        self._before: float | None = None

    def start(self) -> None:
        if self.interval_s is not None:
            self._before = sys.getswitchinterval()
            _set_switch_interval(self.interval_s)

    def stop(self) -> None:
        if self._before is not None:
            _set_switch_interval(self._before)
            self._before = None


def _set_switch_interval(interval_s: float) -> None:
    """The interpreter truncates to whole microseconds (0.007 is kept as 6,999 us); half a microsecond more makes
    it keep the nearest one, so an interval read back and set again stays the same."""
    sys.setswitchinterval(interval_s + 5e-7)


class LagRunner:
    """Everything lag runs for `kafka-pulse lag` and `kafka-pulse run`, built from config; `start()` returns once
    every source made its first round (a cluster that is down at start is simply unknown until it answers). The
    command serves `api.routes()` on its listener, started before this."""

    def __init__(
        self,
        config: PulseConfig,
        clusters: Sequence[ClusterConfig],
        sender: AlertSender | None = None,
        api_url: str = "",
        clock_ms: Callable[[], int] = wall_clock_ms,
        state: Path | None = None,
        registry: CollectorRegistry | None = None,
        broker_health: BrokerHealthBoard | None = None,
        sli_sink: SliPublisher | None = None,
    ) -> None:
        """`api_url` is where the listener serving `api.routes()` answers (incidents link to it); `registry`
        receives lag's families (a new one by default); `state` holds what is written by default (the evaluation
        log's `<state>/sli/lag`; default `pulse.paths.state_dir()`); `broker_health` is the slow-broker detector's
        board when one runs in the same process (the noisy-neighbour diagnosis reads it; none without); `sli_sink`
        also publishes the evaluation log's rows to Kafka (started and stopped by the caller, around this)."""
        lag = config.lag
        self.health = SourceHealth(lag.effective_stale_after_s(), lag.effective_recovery_s(), clock_ms)
        self.service = LagService(lag, self.health, clock_ms, [c.name for c in clusters], broker_health)
        self.service.ready = False
        self.switch_interval = SwitchInterval(lag.switch_interval_s)
        self.sources: list[KafkaLagSource] = []
        self.page_cache: list[PageCacheEstimator] = []
        """One estimate per cluster when `lag.page_cache` is enabled, fed by that cluster's HWM rounds."""
        self.registry = registry if registry is not None else CollectorRegistry()
        self.kafka_log = limiter_for(self.registry)
        """librdkafka's lines and errors of every lag client, one a minute per cluster and kind (pulse/kafka_log.py)."""
        self.fetchers: list[ExactLagFetcher] = []
        cluster_modules: dict[str, Json] = {}
        consumer_modules: dict[str, Json] = {}
        for cluster in clusters:
            kafka = {**client_config(cluster), "client.id": CLIENT_ID, **self.kafka_log.settings(cluster.name)}
            ingestion = lag.ingestion_for(cluster.name)
            offsets = kafka_python_config(cluster, CLIENT_ID, WAIT_S) if ingestion == "admin" else None
            source = KafkaLagSource(cluster.name, kafka, self.service, self.health, ingestion, offsets)
            self.sources.append(source)
            if lag.page_cache.enabled:
                self.page_cache.append(
                    PageCacheEstimator(
                        cluster.name,
                        self.service,
                        lag.page_cache,
                        source.hwm.placements,
                        lag.offset_refresh_s,
                    )
                )
            if lag.exact_time_lag.enabled:
                self.fetchers.append(ExactLagFetcher(cluster.name, kafka, self.service, lag.exact_time_lag))
            profile = _profile(cluster)
            cluster_modules[cluster.name] = cluster_module_json(
                cluster.bootstrap_servers, profile, lag.offset_refresh_s, lag.offset_refresh_s
            )
            consumer_modules[cluster.name] = consumer_module_json(
                lag.mode,
                cluster.name,
                cluster.bootstrap_servers,
                profile,
                lag.effective_group_allow(),
                lag.group_deny,
                ingestion,
            )
        self.registry.register(LagCollector(self.service, lag.metrics_granularity, per_member=lag.metrics_per_member))
        self.share_board: ShareBoard | None = None
        """Share groups' judged reads when `lag.share_groups.enabled` (docs/lag.md, "Share groups"); None without."""
        self.share_loops: list[Periodic] = []
        self.share_pollers: list[GroupTypePoller] = []
        """Share- and streams-group pollers, one per cluster and kind, each with its loop in `share_loops`."""
        extensions = []
        if lag.share_groups.enabled:
            self.share_board = ShareBoard(lag.share_groups.stall_after_s)
            refresh_s = lag.share_groups.refresh_s
            for cluster in clusters:
                settings = kafka_python_config(cluster, SHARE_CLIENT_ID, min(refresh_s, 30.0))
                poller = GroupTypePoller(cluster.name, ShareGroupReader(settings), self.share_board)
                self.share_pollers.append(poller)
                self.share_loops.append(Periodic(f"lag-{cluster.name}-share", refresh_s, poller.poll, fixed_rate=False))
            self.registry.register(ShareGroupCollector(self.share_board))
            extensions = ShareGroupApi(self.share_board, [c.name for c in clusters]).routes()
        self.streams_board: StreamsBoard | None = None
        """Streams groups' reads when `lag.streams_groups.enabled` (docs/lag.md, "Streams groups"); None without."""
        if lag.streams_groups.enabled:
            self.streams_board = StreamsBoard()
            refresh_s = lag.streams_groups.refresh_s
            for cluster in clusters:
                settings = kafka_python_config(cluster, STREAMS_CLIENT_ID, min(refresh_s, 30.0))
                streams = GroupTypePoller(cluster.name, StreamsGroupReader(settings), self.streams_board)
                self.share_pollers.append(streams)
                self.share_loops.append(
                    Periodic(f"lag-{cluster.name}-streams", refresh_s, streams.poll, fixed_rate=False)
                )
            for source in self.sources:
                source.streams_groups = functools.partial(self.streams_board.members, source.cluster)
                source.hwm.streams_inputs = functools.partial(self.streams_board.inputs, source.cluster)
            self.registry.register(StreamsGroupCollector(self.streams_board, self.service))
            extensions += StreamsGroupApi(self.streams_board, self.service).routes()
        self.evaluation_log: EvaluationLog | None = None
        """The SLO engine's `lag` source (docs/sli-log.md); its module, and pyarrow with it (about 30 MB resident),
        is imported only when the log is enabled."""
        if lag.evaluation_log.enabled:
            from lag.notify.evaluation_log import configure_evaluation_log

            self.evaluation_log = configure_evaluation_log(
                lag.evaluation_log, self.service, self.registry, state if state is not None else state_dir(), sli_sink
            )
        self.notifier: LagNotifier | None = None
        notifier_modules: dict[str, Json] = {}
        if lag.notify.enabled and sender is not None:
            threshold = Status[lag.notify.severity]
            self.notifier = LagNotifier.from_config(
                self.service, config.alerting, threshold, lag.notify.interval_s, sender, api_url
            )
            self.registry.register(LagNotifierCollector(self.notifier))
            notifier_modules["alertmanager"] = alertmanager_notifier_json(
                config.alerting.alertmanager_url or "",
                int(threshold),
                lag.notify.interval_s,
                config.alerting.resend_interval_s,
            )
        self.api = BurrowApi(
            self.service, BurrowModules(cluster_modules, consumer_modules, notifier_modules), extensions=extensions
        )
        """The Burrow v3 routes over the service, for the listener the command mounts them on."""

    def metadata(self, cluster: str) -> MetadataReading | None:
        """`cluster`'s last HWM round that read the metadata: brokers, placements, whether every leader answered
        (the status page judges brokers and partitions from it, with no client of its own); None before one."""
        return next((s.hwm.metadata() for s in self.sources if s.cluster == cluster), None)

    def metadata_failure(self, cluster: str) -> str | None:
        """Why `cluster`'s last HWM round read no metadata; None when it did (its `metadata` is then current)."""
        return next((s.hwm.failure for s in self.sources if s.cluster == cluster), None)

    def start(self) -> None:
        self.switch_interval.start()  # before the sources: their first poll may be a backlog decoded flat out
        starting = [threading.Thread(target=s.start, name=f"lag-start-{s.cluster}") for s in self.sources]
        for thread in starting:  # in parallel: an unreachable cluster must not hold up the others
            thread.start()
        for thread in starting:
            thread.join()
        for estimator in self.page_cache:
            estimator.start()
        for fetcher in self.fetchers:
            fetcher.start()
        if self.evaluation_log is not None:
            self.evaluation_log.start()
        for loop in self.share_loops:
            loop.start()
        if self.notifier is not None:
            self.notifier.start()
        self.service.ready = True

    def stop(self) -> None:
        self.service.ready = False
        if self.notifier is not None:
            self.notifier.stop()
        if self.evaluation_log is not None:
            self.evaluation_log.stop()  # writes what is queued
        for loop, poller in zip(reversed(self.share_loops), reversed(self.share_pollers), strict=True):
            loop.stop(timeout_s=10)
            if not loop.is_alive():  # a read still in progress owns its client
                poller.close()
        for fetcher in reversed(self.fetchers):
            fetcher.stop()
        for estimator in reversed(self.page_cache):
            estimator.stop()
        for source in reversed(self.sources):
            source.stop()
        self.switch_interval.stop()


def _profile(cluster: ClusterConfig) -> Json:
    """Burrow's client profile for a cluster: TLS and SASL described, never their secrets."""
    security = cluster.security
    tls: dict[str, Any] | None = None
    if security.protocol in ("SSL", "SASL_SSL"):
        t = security.tls
        tls = {
            "name": cluster.name,
            "noverify": t is not None and not t.verify_hostname,
            "certfile": str(t.cert_file) if t is not None and t.cert_file is not None else "",
            "keyfile": str(t.key_file) if t is not None and t.key_file is not None else "",
            "cafile": str(t.ca_file) if t is not None and t.ca_file is not None else "",
        }
    sasl: dict[str, Any] | None = None
    if security.sasl is not None:
        sasl = {
            "name": cluster.name,
            "handshake-first": True,
            "username": security.sasl.username,
            "mechanism": security.sasl.mechanism,
        }
    return client_profile_json(cluster.name, CLIENT_ID, tls, sasl)
