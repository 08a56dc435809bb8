"""Consumer-lag evaluation, Burrow-compatible, with lag in seconds and the Burrow v3 HTTP API.

Pipeline, one package per stage (imports point down it; pyproject.toml's lag contracts): `ingest` (Kafka, or
`replay` from JSONL) -> `store` (array windows) -> `evaluate` (Burrow's rules, time lag) -> `diagnose` (page cache,
noisy neighbour) -> `serve` (Burrow v3 routes, /metrics) and `notify` (incidents, evaluation log). `protocol` holds the
messages the stages exchange; `service` and `assembly` compose the stages.
"""

from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.protocol import GroupStatus, PartitionVerdict, Status
from lag.store.offsets import OffsetStore

__all__ = ["Evaluator", "GroupStatus", "OffsetStore", "PartitionVerdict", "RuleParams", "Status"]
