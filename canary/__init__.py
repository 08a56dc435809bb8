"""Synthetic producer/consumer: availability, latency and loss per broker and AZ, and the SLI event log.

Flow: `topic` (monitor topic placement) -> `producer` (one probe per partition per interval) -> `consumer` ->
`tracker` (loss, duplicates, order; pure) -> `events` (one `ProbeResult` per probe) -> sinks (`metrics`, SLI log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulse.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from canary.assembly import build_canary
    from canary.events import ProbeResult
    from canary.service import CanaryService
    from canary.sli_log import CANARY_STREAM
    from canary.topic import KafkaPythonReassigner, TopicManager, read_layout

__all__ = [
    "CANARY_STREAM",
    "CanaryService",
    "KafkaPythonReassigner",
    "ProbeResult",
    "TopicManager",
    "build_canary",
    "read_layout",
]

_HOMES = {
    "CANARY_STREAM": "canary.sli_log",
    "CanaryService": "canary.service",
    "KafkaPythonReassigner": "canary.topic",
    "ProbeResult": "canary.events",
    "TopicManager": "canary.topic",
    "build_canary": "canary.assembly",
    "read_layout": "canary.topic",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562), so importing the package is free."""

if not TYPE_CHECKING:  # mypy reads the imports above, so a name missing from them is an error, not an `object`
    __getattr__ = lazy_exports(__name__, _HOMES)
