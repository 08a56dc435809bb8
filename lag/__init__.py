"""Consumer-lag evaluation, Burrow-compatible, with lag in seconds and the Burrow v3 HTTP API.

Pipeline, one package per stage (imports point down it; pyproject.toml's lag contracts): `ingest` (Kafka, or
`replay` from JSONL) -> `store` (array windows) -> `evaluate` (Burrow's rules, time lag) -> `diagnose` (page cache,
noisy neighbour, the one enrichment step) -> `serve` (Burrow v3 routes, /metrics) and `notify` (incidents,
evaluation log). `protocol` holds the messages the stages exchange; `service` and `assembly` compose the stages.

`__all__` is the door: the application imports lag from here, never a submodule.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.protocol import GroupStatus, NoisyNeighbour, PartitionVerdict, Status
from lag.replay import replay_lines
from lag.serve.routes import invalid_request
from lag.service import LagService
from lag.store.access import LagReader, LagWriter
from lag.store.offsets import OffsetStore

if TYPE_CHECKING:
    from lag.assembly import LagRunner

__all__ = [
    "Evaluator",
    "GroupStatus",
    "LagReader",
    "LagRunner",
    "LagService",
    "LagWriter",
    "NoisyNeighbour",
    "OffsetStore",
    "PartitionVerdict",
    "RuleParams",
    "Status",
    "invalid_request",
    "replay_lines",
]

_LAZY = {"LagRunner": "lag.assembly"}
"""Imported on first use: the runner brings the Kafka client, which `lag replay` and the status page never need."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lag' has no attribute {name!r}")
