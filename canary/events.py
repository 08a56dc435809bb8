"""What the probe pipeline hands on: one `ProbeResult` per probe, delivered to every `ProbeSink` (SLI log, metrics).

The producer, consumer and tracker decide each probe's fate; sinks only record it. A probe is settled exactly once:
when its produce fails, when it is consumed, or when its loss deadline passes. A duplicate delivery is an extra
result with `duplicate=True`, so SLO `total` expressions should exclude those rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeResult:
    """The settled fate of one probe record (or one duplicate delivery of it)."""

    time: datetime
    """When the probe was sent, UTC (timezone-aware); the SLI log partitions by its date."""
    cluster: str
    """The cluster name from the config; in mirror mode, the source cluster."""
    topic: str
    partition: int
    broker: int | None
    """Leader of the partition when the probe was sent; None when the canary knew no leader."""
    rack: str | None
    """That leader's `broker.rack`; None when unknown or the broker has none."""
    client_rack: str | None
    """The canary's own `client.rack`, so same-AZ and cross-AZ probes can be told apart."""
    producer_id: str
    """The canary instance's id; records of other instances sharing the topic never become results here."""
    sequence: int
    """Per-(producer, partition) sequence number, counted from 0 at the instance's start."""
    produce_ok: bool
    """The broker acknowledged the record (acks=all) within `message.timeout.ms`."""
    produce_latency_s: float | None
    """Send to acknowledgement, from librdkafka's delivery report; None when the produce failed."""
    consume_ok: bool | None
    """The record was read back; False when lost; None when there was nothing to read (the produce failed)."""
    e2e_latency_s: float | None
    """Send to consumption (same-process monotonic clock); None unless consumed."""
    lost: bool = False
    """Acknowledged but not read back within the loss deadline, or truncated away before it was read."""
    duplicate: bool = False
    """A second (or later) delivery of a sequence already read; this row is extra, not the probe's own."""
    out_of_order: bool = False
    """Read after a higher sequence of the same partition had already been read."""
    error: str | None = None
    """Why the produce failed: the librdkafka error name (e.g. `_MSG_TIMED_OUT`, `NOT_ENOUGH_REPLICAS`)."""
    offset: int | None = None
    """Offset the record was acknowledged at (or read from, for a duplicate); None when the produce failed."""


class ProbeSink(Protocol):
    """Receives settled probes. Calls are serialised (never concurrent) and must return quickly: no I/O waits."""

    def record(self, event: ProbeResult) -> None: ...


class SinkFanout:
    """Hands each result to every sink; a sink that raises is logged and skipped, never allowed to stop probing."""

    def __init__(self, sinks: Iterable[ProbeSink] = ()) -> None:
        self._sinks = list(sinks)

    def add(self, sink: ProbeSink) -> None:
        self._sinks.append(sink)

    def record(self, event: ProbeResult) -> None:
        for sink in self._sinks:
            try:
                sink.record(event)
            except Exception:
                _LOG.exception(
                    "probe sink %s failed on %s[%d] seq %d",
                    type(sink).__name__,
                    event.topic,
                    event.partition,
                    event.sequence,
                )


class MemorySink:
    """Keeps every result in a list: for tests, benches and `kafka-pulse canary --once`-style inspection."""

    def __init__(self) -> None:
        self.events: list[ProbeResult] = []

    def record(self, event: ProbeResult) -> None:
        self.events.append(event)
