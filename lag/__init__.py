"""Consumer-lag evaluation, Burrow-compatible, with lag in seconds and the Burrow v3 HTTP API.

Pipeline: source (Kafka) or replay (JSONL) -> store/window (arrays) -> rules (pure) -> evaluator -> burrow_json.
"""

from lag.evaluator import Evaluator
from lag.rules import RuleParams
from lag.status import GroupStatus, PartitionVerdict, Status
from lag.store import OffsetStore

__all__ = ["Evaluator", "GroupStatus", "OffsetStore", "PartitionVerdict", "RuleParams", "Status"]
