"""The whole config file: one field per section, and the checks that span sections."""

from typing import Annotated, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from pulse.config.alerting import AlertingConfig
from pulse.config.audit import AuditConfig
from pulse.config.canary import CanaryConfig
from pulse.config.clusters import ClusterConfig
from pulse.config.collectors import CollectorsConfig
from pulse.config.dashboards import DashboardsConfig
from pulse.config.http import HttpConfig
from pulse.config.lag import LagConfig
from pulse.config.sli_sink import SliSinkConfig
from pulse.config.slo import SloConfig, SloEntry
from pulse.config.slow_brokers import SlowBrokersConfig
from pulse.config.types import Section, unique_by
from pulse.envsubst import config_problem
from pulse.errors import ConfigError


class PulseConfig(Section):
    """The whole config file; every section has defaults, so `{}` is a valid (if idle) config."""

    clusters: Annotated[list[ClusterConfig], unique_by(lambda c: c.name, "name", "cluster name", "clusters")] = Field(
        default_factory=list
    )
    """The Kafka clusters to monitor; none means the local dev cluster (`kafka-pulse dev up`)."""
    collectors: CollectorsConfig = CollectorsConfig()
    """Broker JMX, cluster state and JVM client metrics (`kafka-pulse collect`)."""
    canary: CanaryConfig = CanaryConfig()
    """The synthetic producer/consumer and its SLI log (`kafka-pulse canary`)."""
    lag: LagConfig = LagConfig()
    """The consumer-lag evaluator and its Burrow v3 API (`kafka-pulse lag`)."""
    slo: SloConfig = SloConfig()
    """The burn-rate job: where the specs, Spark, results and the Pushgateway are (`kafka-pulse slo`)."""
    alerting: AlertingConfig = AlertingConfig()
    """The Alertmanager sink every component sends its alerts through, and its spool."""
    http: HttpConfig = HttpConfig()
    """The listener for /metrics, the Burrow v3 API and the status page."""
    dashboards: DashboardsConfig = DashboardsConfig()
    """The Grafana the generated dashboards live in, for the status page's links."""
    sli_sink: SliSinkConfig = SliSinkConfig()
    """SLI events on Kafka too (off by default; the Parquet logs stay)."""
    slow_brokers: SlowBrokersConfig = SlowBrokersConfig()
    """Slow-broker detection: JMX, a request probe and the canary per broker, against its history and peers."""
    audit: AuditConfig = AuditConfig()
    """The broker-side data-flow audit in `run`: records written per minute and when each group passed them."""
    slos: list[SloEntry] = Field(default_factory=list)
    """SLOs inline (our form or OpenSLO v1); slo/spec.py checks them further against the SLO engine's rules."""

    # lag: checks across sections
    @field_validator("lag")
    @classmethod
    def _lag_clusters_exist(cls, lag: LagConfig, info: ValidationInfo) -> LagConfig:
        clusters = info.data.get("clusters")
        if clusters is None:
            return lag  # clusters itself was invalid and is reported there
        names = [c.name for c in clusters]
        for name in lag.ingestion_by_cluster:
            if name not in names:
                known = ", ".join(names) or "none"
                raise config_problem(
                    f"no cluster named {name!r} is configured (clusters: {known})", ("ingestion_by_cluster", name)
                )
        return lag

    @model_validator(mode="after")
    def _sli_sink_cluster_exists(self) -> Self:
        sink = self.sli_sink
        names = [c.name for c in self.clusters]
        if sink.cluster is not None and sink.cluster not in names:
            known = ", ".join(names) or "none"
            raise config_problem(
                f"no cluster named {sink.cluster!r} is configured (clusters: {known})", ("sli_sink", "cluster")
            )
        if sink.enabled and sink.cluster is None and len(names) > 1:
            raise config_problem(
                f"{len(names)} clusters are configured; name the one SLI events go to", ("sli_sink", "cluster")
            )
        return self

    @model_validator(mode="after")
    def _audit_cluster_exists(self) -> Self:
        audit = self.audit
        names = [c.name for c in self.clusters]
        if audit.cluster is not None and audit.cluster not in names:
            known = ", ".join(names) or "none"
            raise config_problem(
                f"no cluster named {audit.cluster!r} is configured (clusters: {known})", ("audit", "cluster")
            )
        if audit.enabled and audit.cluster is None and len(names) > 1:
            raise config_problem(f"{len(names)} clusters are configured; name the audited one", ("audit", "cluster"))
        if audit.enabled and not audit.log.enabled and not self.sli_sink.enabled:
            raise config_problem(
                "the audit's rows would go nowhere: enable audit.log or sli_sink", ("audit", "log", "enabled")
            )
        return self

    @model_validator(mode="after")
    def _lag_notify_has_a_sink(self) -> Self:
        if self.lag.notify.enabled and not self.alerting.enabled:
            raise config_problem(
                "lag.notify is enabled but alerting is not; set alerting.enabled and alerting.alertmanager_url",
                ("lag", "notify", "enabled"),
            )
        return self

    def cluster(self, name: str | None = None) -> ClusterConfig:
        """The cluster called `name`, or the only one when `name` is None; ConfigError lists the known names."""
        known = ", ".join(c.name for c in self.clusters) or "none"
        if name is None:
            if len(self.clusters) == 1:
                return self.clusters[0]
            if not self.clusters:
                raise ConfigError("no clusters are configured; add one under `clusters:`")
            raise ConfigError(f"{len(self.clusters)} clusters are configured ({known}); name one")
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise ConfigError(f"unknown cluster {name!r}; configured clusters: {known}")
