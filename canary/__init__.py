"""Synthetic producer/consumer: availability, latency and loss per broker and AZ, and the SLI event log.

Flow: `topic` (monitor topic placement) -> `producer` (one probe per partition per interval) -> `consumer` ->
`tracker` (loss, duplicates, order; pure) -> `events` (one `ProbeResult` per probe) -> sinks (`metrics`, SLI log).
"""

from canary.events import MemorySink, ProbeResult, ProbeSink, SinkFanout

__all__ = ["MemorySink", "ProbeResult", "ProbeSink", "SinkFanout"]
