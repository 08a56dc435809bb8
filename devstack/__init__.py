"""The local development stack: Kafka clusters from Maven Central jars, and the services tests run beside them.

It ships behind the `dev` extra (`pip install 'kafka-pulse[dev]'`), which brings the certificate code's
`cryptography`; everything else in kafka-pulse runs without it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from pulse.errors import DependencyMissing
from pulse.lazy_exports import lazy_exports
from pulse.paths import state_dir

if TYPE_CHECKING:
    from devstack.alertmanager import Alertmanager
    from devstack.cluster import DevCluster
    from devstack.noisy_neighbour import NoisyNeighbourWorkload, NoisyPlan
    from devstack.populate import fill
    from devstack.prometheus import Prometheus, ScrapeTarget
    from devstack.runtime import DEFAULT_VERSION, LEGACY_VERSION, ensure_config_command, ensure_runtime, ensure_tools
    from devstack.services import LocalService
    from devstack.slow_disk import parse_slow_disk
    from devstack.stutter import StutterPlan, sigterm_as_interrupt, stutter_node
    from devstack.tiered_storage import (
        TIERED_STORAGE_VERSION,
        cluster_version,
        tiered_storage_jar,
        tiered_storage_overrides,
    )
    from devstack.topology import PROFILES, JmxSecurity, Security, check_fits, data_shape
    from devstack.traffic import DEMO_GROUPS, DEMO_TOPIC, DemoTraffic

__all__ = [
    "DEFAULT_VERSION",
    "DEMO_GROUPS",
    "DEMO_TOPIC",
    "LEGACY_VERSION",
    "PROFILES",
    "TIERED_STORAGE_VERSION",
    "Alertmanager",
    "DemoTraffic",
    "DevCluster",
    "JmxSecurity",
    "LocalService",
    "NoisyNeighbourWorkload",
    "NoisyPlan",
    "Prometheus",
    "ScrapeTarget",
    "Security",
    "StutterPlan",
    "check_fits",
    "cluster_version",
    "data_shape",
    "dev_home",
    "ensure_config_command",
    "ensure_runtime",
    "ensure_tools",
    "fill",
    "parse_slow_disk",
    "require_dev_extra",
    "sigterm_as_interrupt",
    "stutter_node",
    "tiered_storage_jar",
    "tiered_storage_overrides",
]

_HOMES = {
    "Alertmanager": "devstack.alertmanager",
    "DEFAULT_VERSION": "devstack.runtime",
    "DEMO_GROUPS": "devstack.traffic",
    "DEMO_TOPIC": "devstack.traffic",
    "DemoTraffic": "devstack.traffic",
    "DevCluster": "devstack.cluster",
    "JmxSecurity": "devstack.topology",
    "LEGACY_VERSION": "devstack.runtime",
    "LocalService": "devstack.services",
    "NoisyNeighbourWorkload": "devstack.noisy_neighbour",
    "NoisyPlan": "devstack.noisy_neighbour",
    "PROFILES": "devstack.topology",
    "Prometheus": "devstack.prometheus",
    "ScrapeTarget": "devstack.prometheus",
    "Security": "devstack.topology",
    "StutterPlan": "devstack.stutter",
    "TIERED_STORAGE_VERSION": "devstack.tiered_storage",
    "check_fits": "devstack.topology",
    "cluster_version": "devstack.tiered_storage",
    "data_shape": "devstack.topology",
    "ensure_config_command": "devstack.runtime",
    "ensure_runtime": "devstack.runtime",
    "ensure_tools": "devstack.runtime",
    "fill": "devstack.populate",
    "parse_slow_disk": "devstack.slow_disk",
    "sigterm_as_interrupt": "devstack.stutter",
    "stutter_node": "devstack.stutter",
    "tiered_storage_jar": "devstack.tiered_storage",
    "tiered_storage_overrides": "devstack.tiered_storage",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562), so importing the package is free."""

if not TYPE_CHECKING:  # mypy reads the imports above, so a name missing from them is an error, not an `object`
    __getattr__ = lazy_exports(__name__, _HOMES)


def require_dev_extra() -> None:
    """Refuse, naming the fix, when the `dev` extra is not installed: a dev command must not fail half-way."""
    try:
        importlib.import_module("cryptography")
    except ImportError as exc:
        raise DependencyMissing("kafka-pulse dev needs the dev extra: pip install 'kafka-pulse[dev]'") from exc


def dev_home() -> Path:
    """Where the dev cluster of `kafka-pulse dev` (and of every command given no cluster) lives;
    `KAFKA_PULSE_HOME` moves it."""
    return state_dir() / "dev"
