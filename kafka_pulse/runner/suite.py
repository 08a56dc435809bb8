"""`kafka-pulse run`'s process: collectors, canary, lag, the audit and the SLO schedule composed from one config, on one
Prometheus registry served at one /metrics, beside the Burrow v3 lag API, through the same assembly as the
single-component commands (kafka_pulse/runner/assembly.py).

One listener (`http.listen`, with `http.basic_auth` and `http.tls`) serves /metrics, the health endpoints and,
with lag on, the Burrow routes; `lag.listen` and `canary.listen` belong to the single-component commands.

Lifecycle as the style guide's: the constructor validates the whole config and builds every component, connecting
to nothing and binding nothing; `start` starts them (listener first, so a scrape sees the process as soon as it
runs), `stop` stops them in reverse order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_pulse.clusters import resolve_cluster
from kafka_pulse.runner.assembly import (
    Assembly,
    add_alert_sink,
    add_audit,
    add_canary,
    add_collectors,
    add_lag,
    add_sli_sink,
    add_status,
)
from kafka_pulse.runner.audit_reconcile import ReconcileCollector, build_reconcile
from kafka_pulse.runner.heartbeat import add_self_health
from kafka_pulse.runner.slo_schedule import SloSchedule, SloScheduleCollector
from kafka_pulse.runner.slo_stream import StreamEvaluator, sink_topics, stream_root, stream_settings
from pulse.alerts import AlertSink
from pulse.config import ClusterConfig, PulseConfig
from pulse.errors import ConfigError
from pulse.lifecycle import Part
from pulse.redact import redact_url

_LOG = logging.getLogger(__name__)


class Suite:
    """Everything `kafka-pulse run` runs, for the clusters of `config` (or the dev cluster at `dev_home`)."""

    def __init__(
        self, config: PulseConfig, config_source: str, base_dir: Path, dev_home: Path, state_dir: Path
    ) -> None:
        self.config = config
        self.clusters: list[ClusterConfig] = list(config.clusters) or [resolve_cluster(config, None, dev_home)]
        self.off: dict[str, str] = {}
        """Components not running, and why (for the status line)."""
        for key, value in (("lag.listen", config.lag.listen), ("canary.listen", config.canary.listen)):
            if value is not None:
                _LOG.warning("%s is for the single-component command; `run` serves everything on http.listen", key)
        slos = self._slos(config_source, base_dir)  # a bad SLO spec is refused before anything is built
        self.assembly = Assembly(config.http)
        self.registry = self.assembly.registry
        self.url = self.assembly.url
        self.metrics_url = f"{self.url}/metrics"
        self.sink = AlertSink.from_config(config.alerting, state_dir) if config.alerting.enabled else None
        if self.sink is not None:
            add_alert_sink(self.assembly, self.sink)
        if config.sli_sink.enabled:  # before the components that publish through it
            sli_cluster = (
                resolve_cluster(config, config.sli_sink.cluster, dev_home) if config.clusters else self.clusters[0]
            )
            add_sli_sink(self.assembly, config, sli_cluster, "run", state_dir)
        self.lag_api_url: str | None = None
        if config.lag.enabled:
            add_lag(self.assembly, config, self.clusters, self.sink if config.lag.notify.enabled else None, state_dir)
            self.lag_api_url = f"{self.url}/v3/kafka"
        else:
            self.off["lag"] = "lag.enabled is false"
        if config.collectors.enabled:
            add_collectors(self.assembly, config, self.clusters)
        else:
            self.off["collectors"] = "collectors.enabled is false"
        self._canary(dev_home, state_dir)
        self._audit(dev_home, state_dir)
        self._slo_schedule(slos, dev_home, state_dir)
        self._audit_reconcile(bool(slos), dev_home, state_dir)  # after the schedule: stops first
        self.self_health = add_self_health(self.assembly, config, self.sink)
        add_status(self.assembly, config, self.clusters, self.off, self.self_health)  # last: reads the above

    @property
    def parts(self) -> list[Part]:
        return self.assembly.parts.parts

    # --- configure --------------------------------------------------------------------------------------------

    def _canary(self, dev_home: Path, state_dir: Path) -> None:
        settings = self.config.canary
        if not settings.enabled:
            self.off["canary"] = "canary.enabled is false"
            return
        try:
            cluster = (
                resolve_cluster(self.config, settings.cluster, dev_home) if self.config.clusters else self.clusters[0]
            )
        except ConfigError as exc:
            raise ConfigError(f"canary.cluster: {exc}") from exc
        add_canary(self.assembly, self.config, cluster, state_dir)

    def _audit(self, dev_home: Path, state_dir: Path) -> None:
        settings = self.config.audit
        if not settings.enabled:
            self.off["audit"] = "audit.enabled is false"
            return
        try:
            cluster = (
                resolve_cluster(self.config, settings.cluster, dev_home) if self.config.clusters else self.clusters[0]
            )
        except ConfigError as exc:
            raise ConfigError(f"audit.cluster: {exc}") from exc
        add_audit(self.assembly, self.config, cluster, state_dir)

    def _slos(self, config_source: str, base_dir: Path) -> list[Any]:
        config = self.config
        if not config.slo.enabled:
            self.off["slo"] = "slo.enabled is false"
            return []
        if not (config.slos or config.slo.spec):
            self.off["slo"] = "no SLOs configured"
            return []
        from slo import load_slos

        streamed = None
        if config.slo.engine == "stream":  # read from the SLI sink's topics: no Parquet needed at `path`
            streamed = {kind: topic.schema for kind, topic in sink_topics(config).items()}
        return list(load_slos(config, config_source, base_dir, streamed=streamed))

    def _slo_schedule(self, slos: list[Any], dev_home: Path, state_dir: Path) -> None:
        if not slos:
            return
        from slo import SloAlertDelivery, describe

        master = self.config.slo.spark_master
        delivery = (
            SloAlertDelivery.from_config(self.config.alerting, self.sink, self.config.slo.schedule_s)
            if self.sink is not None
            else None
        )
        settings = self.config.slo
        evaluator = self._slo_stream(slos, dev_home, state_dir) if settings.engine == "stream" else None
        schedule = SloSchedule(
            slos,
            settings,
            _spark_factory(
                master, settings.driver_memory, stream=evaluator is not None or self.config.audit.reconcile.enabled
            ),
            True,
            delivery,
            describe(slos),
            evaluator=evaluator,
        )
        self.registry.register(SloScheduleCollector(schedule))
        alerts = ", alerts to Alertmanager" if delivery is not None else ""
        engine = f", streamed from {self.config.sli_sink.topic_prefix}*" if evaluator is not None else ""
        description = f"{len(slos)} SLOs every {settings.schedule_s:g} s on {master}{engine}{alerts}"
        self.assembly.add([Part("slo", schedule, description)])

    def _slo_stream(self, slos: list[Any], dev_home: Path, state_dir: Path) -> StreamEvaluator:
        """`slo.engine: stream`: the SLOs read from the SLI sink's topics on `sli_sink.cluster`; state under
        `slo.stream_dir` or the state directory's `slo-stream/`, as `slo stream` keeps it."""
        config = self.config
        try:
            cluster = (
                resolve_cluster(config, config.sli_sink.cluster, dev_home) if config.clusters else self.clusters[0]
            )
        except ConfigError as exc:
            raise ConfigError(f"slo.engine stream: sli_sink.cluster: {exc}") from exc
        root = stream_root(config.slo.stream_dir, state_dir)
        settings = stream_settings(cluster, root, config.slo.stream_watermark_s, config.slo.schedule_s)
        evaluator = StreamEvaluator(slos, settings, sink_topics(config))
        self.registry.register(evaluator)
        return evaluator

    def _audit_reconcile(self, schedule_owns_spark: bool, dev_home: Path, state_dir: Path) -> None:
        """`audit.reconcile`: the audit's counts read from the SLI sink's topics on `sli_sink.cluster`, on the SLO
        schedule's Spark session when there is one (which then stops it); state under `audit-reconcile/`."""
        config = self.config
        if not config.audit.reconcile.enabled:
            self.off["audit-reconcile"] = "audit.reconcile.enabled is false"
            return
        try:
            cluster = (
                resolve_cluster(config, config.sli_sink.cluster, dev_home) if config.clusters else self.clusters[0]
            )
        except ConfigError as exc:
            raise ConfigError(f"audit.reconcile: sli_sink.cluster: {exc}") from exc
        reconcile = config.audit.reconcile
        root = str(state_dir / "audit-reconcile")
        settings = stream_settings(cluster, root, reconcile.deadline_s, reconcile.trigger_s)
        session = _spark_factory(config.slo.spark_master, config.slo.driver_memory, stream=True)
        runner = build_reconcile(config, settings, session, state_dir, not schedule_owns_spark, self.sink)
        self.registry.register(ReconcileCollector(runner))
        alerts = ", findings to Alertmanager" if self.sink is not None else ""
        description = (
            f"{config.sli_sink.topic_prefix}audit-* on {cluster.name}, minutes judged "
            f"{reconcile.deadline_s:g} s after them, every {reconcile.trigger_s:g} s{alerts}"
        )
        self.assembly.add([Part("audit-reconcile", runner, description)])

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every part in order; if one fails, those already started are stopped and the error raised."""
        self.assembly.start()

    def stop(self) -> None:
        """Stop the started parts in reverse order; a part failing to stop is logged and the others still stop."""
        self.assembly.stop()

    def status_line(self) -> str:
        """What runs where: cluster, components on and off, the URLs, and whether they need a login."""
        names = ", ".join(f"{c.name} ({','.join(c.bootstrap_servers)})" for c in self.clusters)
        on = [f"{p.name}: {p.description}" for p in self.assembly.described()]
        off = [f"{name}: off ({why})" for name, why in sorted(self.off.items())]
        alerting = self.config.alerting
        alerts = f"alerting: {redact_url(alerting.alertmanager_url or '')}" if alerting.enabled else "alerting: off"
        login = " (basic auth)" if self.config.http.basic_auth is not None else ""
        urls = f"status page {self.url}/{login}; metrics {self.metrics_url}{login}"
        if self.lag_api_url is not None:
            urls += f"; lag API {self.lag_api_url}{login}"
        return f"kafka-pulse run: cluster {names}\n  " + "\n  ".join([*on, *off, alerts, urls])


def _spark_factory(master: str, driver_memory: str, stream: bool = False) -> Callable[[], Any]:
    """The schedule's session maker; the stream's session also gets Spark's Kafka source (slo.package_settings)."""

    def make() -> Any:
        from pulse.paths import cache_dir
        from slo import package_settings, spark_session

        extra = package_settings(cache_dir()) if stream else None
        return spark_session(master, extra=extra, driver_memory=driver_memory)

    return make
