"""`kafka-pulse run`'s process: collectors, canary, lag and the SLO schedule composed from one config, on one
Prometheus registry served at one /metrics, beside the Burrow v3 lag API.

One listener (`http.listen`, with `http.basic_auth` and `http.tls`): with lag on it is lag/api.py's server, which
serves the Burrow routes (GET, DELETE, POST) and /metrics from the shared registry; with lag off it is
pulse/http_server.py's. `lag.listen` and `canary.listen` belong to the single-component commands.

Lifecycle as the style guide's: the constructor validates the whole config and builds every component, connecting
to nothing but the listener it binds; `start` starts them (listener first, so a scrape sees the process as soon
as it runs), `stop` stops them in reverse order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from kafka_pulse.clusters import resolve_cluster
from kafka_pulse.runner.slo_schedule import SloSchedule, SloScheduleCollector
from pulse.alerts import AlertSink, AlertSinkCollector
from pulse.config import ClusterConfig, PulseConfig
from pulse.errors import ConfigError
from pulse.http_server import HttpServer

_LOG = logging.getLogger(__name__)


class Component(Protocol):
    """What the suite needs of each part: started once, stopped once."""

    def start(self) -> Any: ...

    def stop(self) -> Any: ...


@dataclass(frozen=True)
class Part:
    """A started-or-not component with the words the status line uses for it."""

    name: str
    component: Component
    description: str


class Suite:
    """Everything `kafka-pulse run` runs, for the clusters of `config` (or the dev cluster at `dev_home`)."""

    def __init__(
        self, config: PulseConfig, config_source: str, base_dir: Path, dev_home: Path, state_dir: Path
    ) -> None:
        self.config = config
        self.clusters: list[ClusterConfig] = list(config.clusters) or [resolve_cluster(config, None, dev_home)]
        self.parts: list[Part] = []
        self.off: dict[str, str] = {}
        """Components not running, and why (for the status line)."""
        self._started: list[Part] = []
        for key, value in (("lag.listen", config.lag.listen), ("canary.listen", config.canary.listen)):
            if value is not None:
                _LOG.warning("%s is for the single-component command; `run` serves everything on http.listen", key)
        slos = self._slos(config_source, base_dir)  # a bad SLO spec is refused before anything binds or starts
        self.sink = AlertSink.from_config(config.alerting, state_dir) if config.alerting.enabled else None
        self.lag_api_url: str | None = None
        listener = self._listener(state_dir)
        self.metrics_url = f"{self.url}/metrics"
        try:
            self._collectors()
            self._canary(dev_home, state_dir)
            self._slo_schedule(slos)
        except BaseException:
            listener.stop()
            raise
        if self.sink is not None:
            self.registry.register(AlertSinkCollector(self.sink))

    # --- configure --------------------------------------------------------------------------------------------

    def _listener(self, state_dir: Path) -> Component:
        config = self.config
        if config.lag.enabled:
            from lag.runner import LagRunner

            notify = self.sink if config.lag.notify.enabled else None
            runner = LagRunner(config, self.clusters, notify, listen=config.http.listen)
            self.registry = runner.registry
            self.url = runner.api.url
            self.lag_api_url = f"{self.url}/v3/kafka"
            rules = f"{config.lag.mode} rules" + (", incidents to Alertmanager" if notify is not None else "")
            self.parts.append(Part("lag", runner, rules))
            return runner
        self.off["lag"] = "lag.enabled is false"
        self.registry = CollectorRegistry()
        server = HttpServer.from_config(config.http, self.registry)
        self.url = server.url
        self.parts.append(Part("http", server, "metrics listener"))
        return server

    def _collectors(self) -> None:
        settings = self.config.collectors
        if not settings.enabled:
            self.off["collectors"] = "collectors.enabled is false"
            return
        from collectors.service import CollectorService

        service = CollectorService(self.clusters, settings)
        service.register(self.registry)
        jmx = sum(len(c.jmx.brokers) for c in self.clusters if c.jmx is not None)
        what = f"{jmx} JMX brokers over {settings.transport}" if jmx else "Admin API only (no jmx.brokers)"
        self.parts.append(Part("collectors", service, f"{what}, every {settings.scrape_interval_s:g} s"))

    def _canary(self, dev_home: Path, state_dir: Path) -> None:
        settings = self.config.canary
        if not settings.enabled:
            self.off["canary"] = "canary.enabled is false"
            return
        from canary.mirror import configure_mirror
        from canary.service import CanaryService
        from canary.sli_log import configure_sli_log

        try:
            cluster = (
                resolve_cluster(self.config, settings.cluster, dev_home) if self.config.clusters else self.clusters[0]
            )
        except ConfigError as exc:
            raise ConfigError(f"canary.cluster: {exc}") from exc
        sli_log = configure_sli_log(settings.sli_log, self.registry, state_dir)
        service = CanaryService(cluster, settings, [sli_log] if sli_log is not None else [], registry=self.registry)
        mirror = configure_mirror(self.config, self.registry, sli_log, cluster)
        if sli_log is not None:
            self.parts.append(Part("sli-log", sli_log, f"canary SLI log in {sli_log.directory}"))
        self.parts.append(
            Part("canary", service, f"topic {settings.topic} on {cluster.name}, every {settings.interval_s:g} s")
        )
        if mirror is not None:
            self.parts.append(Part("mirror", mirror, f"mirror canary to {settings.mirror.target}"))

    def _slos(self, config_source: str, base_dir: Path) -> list[Any]:
        config = self.config
        if not config.slo.enabled:
            self.off["slo"] = "slo.enabled is false"
            return []
        if not (config.slos or config.slo.spec):
            self.off["slo"] = "no SLOs configured"
            return []
        from slo.spec import load_slos

        return list(load_slos(config, config_source, base_dir))

    def _slo_schedule(self, slos: list[Any]) -> None:
        if not slos:
            return
        from slo.alerting import SloAlertDelivery
        from slo.spec import describe

        master = self.config.slo.spark_master
        delivery = (
            SloAlertDelivery.from_config(self.config.alerting, self.sink, self.config.slo.schedule_s)
            if self.sink is not None
            else None
        )
        schedule = SloSchedule(slos, self.config.slo, _spark_factory(master), True, delivery, describe(slos))
        self.registry.register(SloScheduleCollector(schedule))
        alerts = ", alerts to Alertmanager" if delivery is not None else ""
        self.parts.append(
            Part("slo", schedule, f"{len(slos)} SLOs every {self.config.slo.schedule_s:g} s on {master}{alerts}")
        )

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every part in order; if one fails, those already started are stopped and the error raised."""
        try:
            for part in self.parts:
                part.component.start()
                self._started.append(part)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the started parts in reverse order; a part failing to stop is logged and the others still stop."""
        while self._started:
            part = self._started.pop()
            try:
                part.component.stop()
            except Exception:
                _LOG.exception("stopping %s failed", part.name)
        if self.sink is not None:
            self.sink.close()

    def status_line(self) -> str:
        """What runs where: cluster, components on and off, the URLs, and whether they need a login."""
        names = ", ".join(f"{c.name} ({','.join(c.bootstrap_servers)})" for c in self.clusters)
        on = [f"{p.name}: {p.description}" for p in self.parts if p.name not in ("http", "sli-log")]
        off = [f"{name}: off ({why})" for name, why in sorted(self.off.items())]
        alerting = self.config.alerting
        alerts = f"alerting: {alerting.alertmanager_url}" if alerting.enabled else "alerting: off"
        login = " (basic auth)" if self.config.http.basic_auth is not None else ""
        urls = f"metrics {self.metrics_url}{login}"
        if self.lag_api_url is not None:
            urls += f"; lag API {self.lag_api_url}{login}"
        return f"kafka-pulse run: cluster {names}\n  " + "\n  ".join([*on, *off, alerts, urls])


def _spark_factory(master: str) -> Callable[[], Any]:
    def make() -> Any:
        from slo.session import spark_session

        return spark_session(master)

    return make
