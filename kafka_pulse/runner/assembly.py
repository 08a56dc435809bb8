"""The one assembly of every long-running command: one registry, one listener (pulse.http, opened at start) and
the components' parts behind it. `run` adds every enabled component; `collect`, `canary` and `lag` add one each,
through the same functions, so a component is built the same way wherever it runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from kafka_pulse.self_health import SelfHealth
from pulse.alerts import AlertSink, AlertSinkCollector
from pulse.broker_health import BrokerHealthBoard
from pulse.config import ClusterConfig, HttpConfig, PulseConfig
from pulse.http import Handler, HttpServer, Route
from pulse.lifecycle import Part, Parts

if TYPE_CHECKING:
    from pulse.sli_sink import SliSink


class Assembly:
    """A listener and the parts behind it: started listener first (a scrape sees the process as soon as it
    runs), stopped in reverse. `/-/ready` answers 200 once every part is started."""

    def __init__(self, http: HttpConfig, listen: str | None = None, where: str = "http.listen") -> None:
        """Serves on `listen` (named `where` in errors) instead of `http.listen` when given; binds nothing yet."""
        self.registry = CollectorRegistry()
        self.listener = HttpServer.from_config(
            http, self.registry, ready=lambda: self.parts.running, listen=listen, where=where
        )
        self.parts = Parts([Part("http", self.listener, "listener")])
        self.login = http.basic_auth is not None
        self.broker_health = BrokerHealthBoard()
        """One slow-broker board per process: the collectors' detector publishes to it, lag's diagnosis reads it."""
        self.sli_sink: SliSink | None = None
        """The process's SLI sink (`sli_sink.enabled`), shared by the canary and lag; see `add_sli_sink`."""

    @property
    def url(self) -> str:
        return self.listener.url

    @property
    def login_note(self) -> str:
        """What a status line appends to a URL of this listener."""
        return " (basic auth)" if self.login else ""

    def add(self, parts: Iterable[Part]) -> None:
        self.parts.parts.extend(parts)

    def mount(self, routes: Iterable[Route], fallback: Handler | None = None) -> None:
        self.listener.app.router.add(routes, fallback)

    def described(self) -> list[Part]:
        """The parts a status line names (the listener and helpers left out)."""
        helpers = ("http", "sli-log", "alert-sink", "sli-sink")
        return [p for p in self.parts.parts if p.description and p.name not in helpers]

    def start(self) -> None:
        self.parts.start()

    def stop(self) -> None:
        self.parts.stop()


class _ClosesSink:
    """An alert sink as a part: nothing to start; closed after every part that sends through it has stopped."""

    def __init__(self, sink: AlertSink) -> None:
        self.sink = sink

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self.sink.close()


def add_alert_sink(assembly: Assembly, sink: AlertSink) -> None:
    """Its spool and delivery families on /metrics; added before the parts that send through it."""
    assembly.registry.register(AlertSinkCollector(sink))
    assembly.add([Part("alert-sink", _ClosesSink(sink))])


def add_sli_sink(assembly: Assembly, config: PulseConfig, cluster: ClusterConfig, role: str, state: Path) -> None:
    """With `sli_sink.enabled`: the process's SLI sink publishing to `cluster` (`sli_sink.cluster` resolved by the
    caller), spooling in `<sli_sink.spool_dir or state/sli-spool>/<role>` (`run`, `canary`, `lag`: processes of
    different commands never share a spool), its families on /metrics. Added before the parts that publish
    through it, so it starts first and stops last."""
    from pulse.sli_sink import SliSink, SliSinkCollector  # pyarrow, only for a process that publishes

    settings = config.sli_sink
    if not settings.enabled:
        return
    root = settings.spool_dir if settings.spool_dir is not None else state / "sli-spool"
    sink = SliSink.from_config(settings, cluster, root / role)
    assembly.registry.register(SliSinkCollector(sink))
    assembly.sli_sink = sink
    topics = f"{settings.topic_prefix}* on {cluster.name}"
    assembly.add([Part("sli-sink", sink, f"SLI events to {topics}, spooled in {root / role}")])


def add_collectors(assembly: Assembly, config: PulseConfig, clusters: Sequence[ClusterConfig]) -> None:
    """With the slow-broker detector publishing to the assembly's board, fed the canary's per-broker latencies
    when a canary runs in the same process (it is added later, so it is looked up at each evaluation)."""
    from collectors import build_collectors
    from kafka_pulse.runner.canary_latency import CanaryLatencyFeed

    def canary() -> Any | None:
        return next((p.service for p in assembly.parts.parts if p.name == "canary"), None)

    feed = CanaryLatencyFeed(canary)
    board = assembly.broker_health
    assembly.add(build_collectors(clusters, config.collectors, assembly.registry, config.slow_brokers, board, feed))


def add_canary(assembly: Assembly, config: PulseConfig, cluster: ClusterConfig, state: Path) -> None:
    from canary import build_canary

    assembly.add(build_canary(config, cluster, assembly.registry, state, assembly.sli_sink))


def add_audit(assembly: Assembly, config: PulseConfig, cluster: ClusterConfig, state: Path) -> None:
    """The broker-side audit of `cluster` (`audit.cluster` resolved by the caller), its rows to its Parquet log and,
    with `sli_sink.enabled`, to the process's SLI sink (added before it, so the sink stops after the audit)."""
    from audit import build_audit

    assembly.add(build_audit(config.audit, cluster, assembly.registry, state, assembly.sli_sink))


def add_lag(
    assembly: Assembly, config: PulseConfig, clusters: Sequence[ClusterConfig], sink: AlertSink | None, state: Path
) -> None:
    """Lag's families on the registry and the Burrow v3 routes on the listener (unknown routes get Burrow's
    answer); with `sink`, incidents go to Alertmanager and link to this listener's API."""
    from lag import LagRunner, invalid_request

    runner = LagRunner(
        config,
        clusters,
        sink,
        assembly.url,
        state=state,
        registry=assembly.registry,
        broker_health=assembly.broker_health,
        sli_sink=assembly.sli_sink,
    )
    assembly.mount(runner.api.routes(), invalid_request)
    rules = f"{config.lag.mode} rules" + (", incidents to Alertmanager" if runner.notifier is not None else "")
    assembly.add([Part("lag", runner, rules)])


def add_status(
    assembly: Assembly,
    config: PulseConfig,
    clusters: Sequence[ClusterConfig],
    off: dict[str, str] | None = None,
    self_health: SelfHealth | None = None,
) -> None:
    """The status page (`/`, its assets, `/api/status`) over the parts added so far, which it reads in-process
    (its check sections too: no Kafka client of its own); added last, so its board starts once they run. `off`
    names the components not running here, and why; `self_health` (in `run`) answers the check's `self` section
    without a request to our own listener."""
    from kafka_pulse.status.board import StatusBoard, StatusSources
    from kafka_pulse.status.in_process import in_process_check
    from kafka_pulse.status.lag_snapshot import LagSnapshots
    from kafka_pulse.status.readings import LatestProbes
    from kafka_pulse.status.routes import load_assets, status_routes

    services: dict[str, Any] = {p.name: p.service for p in assembly.parts.parts}
    lag_runner = services.get("lag")
    reconcile = services.get("audit-reconcile")
    sources = StatusSources(
        config,
        list(clusters),
        canary=services.get("canary"),
        lag=lag_runner.service if lag_runner is not None else None,
        slo=services.get("slo"),
        off=dict(off or {}),
        shares=lag_runner.share_board if lag_runner is not None else None,
    )
    probes = LatestProbes()
    if sources.canary is not None:
        sources.canary.add_sink(probes)  # each partition's last settled probe: the round trip section
    # one holder: the board takes the lag verdicts once per refresh, its in-process check reads the same ones
    lag = LagSnapshots(sources.lag, config.lag.status_page_groups) if sources.lag is not None else None
    check = in_process_check(
        self_health,
        lag,
        lag_runner,
        sources.canary,
        probes,
        assembly.broker_health,
        services.get("collectors"),
        sources.shares,
        reconcile.stream if reconcile is not None else None,
    )
    board = StatusBoard(sources, check=check, lag=lag)
    assembly.mount(status_routes(board.encoded, load_assets()))
    assembly.add([Part("status", board, f"page at / (JSON at /api/status), refreshed every {board.refresh_s:g} s")])
