"""The canary built from config, the one way `kafka-pulse canary` and `kafka-pulse run` get it: the SLI log, the
probing service and (with `canary.mirror`) the mirror canary, as parts in start order, not started yet."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from canary.mirror import configure_mirror
from canary.service import CanaryService
from canary.sli_log import configure_sli_log
from pulse.config import ClusterConfig, PulseConfig
from pulse.lifecycle import Part


def build_canary(config: PulseConfig, cluster: ClusterConfig, registry: CollectorRegistry, state: Path) -> list[Part]:
    """Parts probing `cluster`, their families on `registry`; the SLI log starts first and stops last, so the
    probes' final rows are written. A bad mirror cluster name is a ConfigError here, before anything runs."""
    settings = config.canary
    sli_log = configure_sli_log(settings.sli_log, registry, state)
    service = CanaryService(cluster, settings, [sli_log] if sli_log is not None else [], registry=registry)
    mirror = configure_mirror(config, registry, sli_log, cluster)
    parts: list[Part] = []
    if sli_log is not None:
        parts.append(Part("sli-log", sli_log, f"canary SLI log in {sli_log.directory}"))
    probing = f"topic {settings.topic} on {cluster.name}, every {settings.interval_s:g} s"
    parts.append(Part("canary", service, probing))
    if mirror is not None:
        parts.append(Part("mirror", mirror, f"mirror canary to {settings.mirror.target}"))
    return parts
