"""Consumer-lag evaluation, Burrow-compatible, with lag in seconds and the Burrow v3 HTTP API.

Pipeline, one package per stage (imports point down it; pyproject.toml's lag contracts): `ingest` (Kafka, or
`replay` from JSONL) -> `store` (array windows) -> `evaluate` (Burrow's rules, time lag) -> `diagnose` (page cache,
noisy neighbour, the one enrichment step) -> `serve` (Burrow v3 routes, /metrics) and `notify` (incidents,
evaluation log). `protocol` holds the messages the stages exchange; `service` and `assembly` compose the stages.

`__all__` is the door: the application imports lag from here, never a submodule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulse.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lag.assembly import LagRunner
    from lag.notify.evaluation_log import GROUPS_STREAM
    from lag.protocol import ClusterRows, GroupStatus, MetadataReading, Status
    from lag.replay import replay_lines
    from lag.serve.routes import invalid_request
    from lag.store.access import LagReader

__all__ = [
    "GROUPS_STREAM",
    "ClusterRows",
    "GroupStatus",
    "LagReader",
    "LagRunner",
    "MetadataReading",
    "Status",
    "invalid_request",
    "replay_lines",
]

_HOMES = {
    "GROUPS_STREAM": "lag.notify.evaluation_log",
    "ClusterRows": "lag.protocol",
    "GroupStatus": "lag.protocol",
    "LagReader": "lag.store.access",
    "LagRunner": "lag.assembly",
    "MetadataReading": "lag.protocol",
    "Status": "lag.protocol",
    "invalid_request": "lag.serve.routes",
    "replay_lines": "lag.replay",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562): `lag replay` and the status page
never load the Kafka client the runner brings."""

if not TYPE_CHECKING:  # mypy reads the imports above, so a name missing from them is an error, not an `object`
    __getattr__ = lazy_exports(__name__, _HOMES)
