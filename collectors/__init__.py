"""Broker and client JMX metrics and cluster state from the Admin API, exposed to Prometheus.

Flow: `transport` (JMX reads) -> `mapping` (jmx_exporter/Strimzi names, pure) -> `scrapers` (a thread per broker)
-> `collector` (prometheus_client Collectors); `cluster_state` reads the Admin API; `clients` scrapes the JVM
clients an operator lists the same way; `service` composes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulse.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from collectors.cluster_state import ClusterSnapshot
    from collectors.service import NOT_READ_HERE, build_collectors
    from collectors.slow_broker_rules import Signal

__all__ = [
    "NOT_READ_HERE",
    "ClusterSnapshot",
    "Signal",
    "build_collectors",
]

_HOMES = {
    "NOT_READ_HERE": "collectors.service",
    "ClusterSnapshot": "collectors.cluster_state",
    "Signal": "collectors.slow_broker_rules",
    "build_collectors": "collectors.service",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562), so importing the package is free."""

if not TYPE_CHECKING:  # mypy reads the imports above, so a name missing from them is an error, not an `object`
    __getattr__ = lazy_exports(__name__, _HOMES)
