"""The canary built from config, the one way `kafka-pulse canary` and `kafka-pulse run` get it: the SLI log, the
probing service and (with `canary.mirror`) the mirror canary, as parts in start order, not started yet."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from canary.events import ProbeSink
from canary.mirror import configure_mirror
from canary.service import CanaryService
from canary.sli_log import PublishedProbes, configure_sli_log
from pulse.config import ClusterConfig, PulseConfig
from pulse.lifecycle import Part
from pulse.sli_sink import SliPublisher


def build_canary(
    config: PulseConfig,
    cluster: ClusterConfig,
    registry: CollectorRegistry,
    state: Path,
    sli_sink: SliPublisher | None = None,
) -> list[Part]:
    """Parts probing `cluster`, their families on `registry`; the SLI log starts first and stops last, so the
    probes' final rows are written. With `sli_sink` (started and stopped by the caller, around these parts),
    every settled probe is published to Kafka too. A bad mirror cluster name is a ConfigError here, before
    anything runs."""
    settings = config.canary
    sli_log = configure_sli_log(settings.sli_log, registry, state)
    sinks: list[ProbeSink] = [sli_log] if sli_log is not None else []
    if sli_sink is not None:
        sinks.append(PublishedProbes(sli_sink))
    service = CanaryService(cluster, settings, sinks, registry=registry)
    mirror = configure_mirror(config, registry, sli_log, cluster, sli_sink)
    parts: list[Part] = []
    if sli_log is not None:
        parts.append(Part("sli-log", sli_log, f"canary SLI log in {sli_log.directory}"))
    probing = f"topic {settings.topic} on {cluster.name}, every {settings.interval_s:g} s"
    parts.append(Part("canary", service, probing))
    if mirror is not None:
        parts.append(Part("mirror", mirror, f"mirror canary to {settings.mirror.target}"))
    return parts
