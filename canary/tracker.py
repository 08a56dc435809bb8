"""Per-partition bookkeeping of this instance's probes: loss, duplicates, order and truncation (pure).

Every method takes the clock (`now`, monotonic seconds) and returns the `ProbeResult`s it settles; the service
hands those to the sinks. Rules, after Xinfra Monitor's ConsumeService but counted apart:
  1. A probe is settled once: produce failed, read back, or lost.
  1b. A probe acknowledged later than `latency_slo_s` is not `produce_ok` (error `_SLO_EXCEEDED`), though it is in
     the log and is read back like any other.
  2. Lost: acknowledged, and not read back within `loss_deadline_s` of its acknowledgement, or its offset deleted
     (log start moved past it) or truncated (high watermark fell below it) before it was read.
  3. Duplicate: a sequence read again after it was read once; an extra result row with `duplicate=True`.
  4. Out of order: read after a higher sequence of the same partition was already read.
  5. Truncation: an acknowledged offset later gone: the log now ends below it (the reader's position out of range,
     or the periodic log check), or the log hands the offset out again (a later probe acknowledged, or a record
     read, at or below it); records already read are counted as truncated, unread ones are lost. Only offsets
     acknowledged before the log was looked at count: a record acknowledged after a watermark was read is above it
     by right.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from canary.events import ProbeResult

SLO_EXCEEDED = "_SLO_EXCEEDED"
"""The `error` of a probe acknowledged, but later than the latency SLO (not a librdkafka name: ours)."""


class _State(Enum):
    SENT = "sent"
    ACKED = "acked"
    """Acknowledged, waiting to be read."""
    READ_EARLY = "read_early"
    """Read back before its delivery report was handled (the consumer can beat the producer's poll loop)."""
    FAILED = "failed"
    CONSUMED = "consumed"
    LOST = "lost"


@dataclass
class _Probe:
    sequence: int
    sent_s: float
    sent_at: datetime
    broker: int | None
    rack: str | None
    state: _State = _State.SENT
    offset: int | None = None
    produce_latency_s: float | None = None
    acked_s: float | None = None
    read_s: float | None = None
    out_of_order: bool = False
    error: str | None = None
    settled_s: float | None = None
    truncated: bool = False
    """Its offset was found gone once; never counted again."""


@dataclass
class PartitionCounts:
    """Running totals of what did not become (or is not only) a `ProbeResult` row, for the metrics."""

    truncations: int = 0
    """Times the partition's log was seen shorter than an acknowledged offset."""
    truncated: int = 0
    """Records read back earlier whose offsets were later truncated away."""
    late: int = 0
    """Read back after being declared lost (the deadline was too short, or the consumer was stuck)."""
    persisted_after_error: int = 0
    """Read back although the produce reported an error (a timed-out request that did reach the log)."""
    unknown: int = 0
    """Records with this instance's id but a sequence it does not (or no longer) track."""
    last_cut: int | None = None
    """The offset the log was last found cut at (acknowledged offsets from there on were gone)."""


@dataclass
class _Partition:
    probes: dict[int, _Probe] = field(default_factory=dict)
    highest_read: int = -1
    highest_offset_read: int = -1
    counts: PartitionCounts = field(default_factory=PartitionCounts)
    suspected_end: tuple[int, float] | None = None
    """(log end, when asked) of a log check that found acknowledged offsets at or above the end, awaiting proof."""


class Tracker:
    """Probes of one canary instance on one topic; not thread-safe (the service serialises calls)."""

    def __init__(
        self,
        cluster: str,
        topic: str,
        producer_id: str,
        client_rack: str | None,
        loss_deadline_s: float,
        retain_s: float | None = None,
        latency_slo_s: float | None = None,
    ) -> None:
        self.cluster = cluster
        self.topic = topic
        self.producer_id = producer_id
        self.client_rack = client_rack
        self.loss_deadline_s = loss_deadline_s
        self.retain_s = retain_s if retain_s is not None else 2 * loss_deadline_s
        """How long settled probes are remembered, to tell duplicates and late arrivals from unknown records."""
        self.latency_slo_s = latency_slo_s
        """Acknowledged later than this is not `produce_ok` (rule 1b); None: any acknowledgement is."""
        self._partitions: dict[int, _Partition] = defaultdict(_Partition)

    # ---- producer side ------------------------------------------------------------------------------

    def sent(
        self, partition: int, sequence: int, now: float, sent_at: datetime, broker: int | None, rack: str | None
    ) -> None:
        """A probe left the canary; `broker`/`rack` is the leader the canary believed in at send time."""
        self._partitions[partition].probes[sequence] = _Probe(sequence, now, sent_at, broker, rack)

    def acked(self, partition: int, sequence: int, offset: int, latency_s: float, now: float) -> list[ProbeResult]:
        """The delivery report says the record is at `offset`; settles it if it was already read back."""
        probe = self._partitions[partition].probes.get(sequence)
        if probe is None or probe.state not in (_State.SENT, _State.READ_EARLY):
            return []
        probe.produce_latency_s, probe.acked_s = latency_s, now
        if self.latency_slo_s is not None and latency_s > self.latency_slo_s:
            probe.error = SLO_EXCEEDED
        results: list[ProbeResult] = []
        if offset >= 0:  # -1: acknowledged without an offset (a retry the broker found already written)
            probe.offset = offset
            # Rule 5: an earlier probe was acknowledged at this offset or above it, so the log was cut below it.
            results = self.truncated(partition, offset, now, before_sequence=sequence)
        if probe.state is _State.READ_EARLY:
            return [*results, self._settle(partition, probe, _State.CONSUMED, now)]
        probe.state = _State.ACKED
        return results

    def failed(self, partition: int, sequence: int, error: str, now: float) -> list[ProbeResult]:
        """The produce failed (after librdkafka's own retries, within `message.timeout.ms`)."""
        probe = self._partitions[partition].probes.get(sequence)
        if probe is None or probe.state not in (_State.SENT, _State.READ_EARLY):
            return []
        probe.error = error
        if probe.state is _State.READ_EARLY:
            # In the log although the client gave up: the read is what happened, the error is recorded with it.
            self._partitions[partition].counts.persisted_after_error += 1
            return [self._settle(partition, probe, _State.CONSUMED, now)]
        return [self._settle(partition, probe, _State.FAILED, now)]

    # ---- consumer side ------------------------------------------------------------------------------

    def arrived(self, partition: int, sequence: int, offset: int, now: float) -> list[ProbeResult]:
        """One of our records was read at `offset`."""
        part = self._partitions[partition]
        results: list[ProbeResult] = []
        if offset <= part.highest_offset_read:
            # The log hands out an offset we already read: it was truncated and rewritten (rule 5).
            results += self.truncated(partition, offset, now, before_sequence=sequence)
        part.highest_offset_read = offset
        probe = part.probes.get(sequence)
        if probe is None:
            part.counts.unknown += 1
            return results
        if probe.state in (_State.CONSUMED, _State.READ_EARLY):
            results.append(self._duplicate(partition, probe, offset, now))
            return results
        if probe.state is _State.LOST:
            part.counts.late += 1
            return results
        probe.out_of_order = sequence < part.highest_read
        part.highest_read = max(part.highest_read, sequence)
        probe.read_s = now
        if probe.state is _State.FAILED:
            part.counts.persisted_after_error += 1
            return results
        if probe.state is _State.SENT:
            probe.state, probe.offset = _State.READ_EARLY, offset
            return results
        if probe.state is _State.ACKED:
            if probe.offset is None:
                probe.offset = offset
            results.append(self._settle(partition, probe, _State.CONSUMED, now))
        return results

    def offsets_deleted(self, partition: int, log_start: int, now: float) -> list[ProbeResult]:
        """The log now starts at `log_start` although we had not read up to it: acked probes below are lost."""
        return self._lose_unread(partition, lambda offset: offset < log_start, now)

    def truncated(
        self,
        partition: int,
        high_watermark: int,
        now: float,
        before_sequence: int | None = None,
        acked_before: float | None = None,
    ) -> list[ProbeResult]:
        """The log now ends at `high_watermark`; acknowledged offsets at or above it are gone (rule 5).

        `before_sequence` limits this to probes sent before it: when the truncation shows as an offset handed out
        again, the record carrying it (and later ones) were written after the truncation and are not gone.
        `acked_before` limits it to probes acknowledged by then: the moment the watermark was asked for.
        """
        part = self._partitions[partition]
        limit = before_sequence if before_sequence is not None else float("inf")
        asked = acked_before if acked_before is not None else float("inf")
        gone = [
            p
            for p in part.probes.values()
            if p.offset is not None
            and p.offset >= high_watermark
            and p.state in (_State.ACKED, _State.CONSUMED)
            and not p.truncated
            and p.sequence < limit
            and p.acked_s is not None
            and p.acked_s <= asked
        ]
        if not gone:
            return []
        for p in gone:
            p.truncated = True
        part.counts.truncations += 1
        part.counts.last_cut = high_watermark
        part.counts.truncated += sum(1 for p in gone if p.state is _State.CONSUMED)
        part.highest_offset_read = min(part.highest_offset_read, high_watermark - 1)
        lost = [p for p in gone if p.state is _State.ACKED]
        return [self._settle(partition, p, _State.LOST, now) for p in sorted(lost, key=lambda p: p.sequence)]

    def log_end_seen(self, partition: int, log_end: int, asked_s: float, now: float) -> list[ProbeResult]:
        """The periodic log check saw the log end (high watermark) at `log_end` when asked at `asked_s` (rule 5).

        One look is not proof: a leader just elected reports a stale high watermark, below records it holds, until
        it next recomputes it from its in-sync replicas' logs (seen on Kafka 4.3 after an unclean election, for as
        long as nothing was written). So a check that finds acknowledged offsets at or above the end raises a
        suspicion, and a later check confirms it once the end has moved (the watermark was recomputed, and the
        in-sync replicas hold every acknowledged record that survived) while still at or below such an offset.
        Only offsets acknowledged before the first check count.
        """
        part = self._partitions[partition]
        acked = self.acked_offsets(partition, acked_before=asked_s)
        if acked is None or acked[1] < log_end:
            part.suspected_end = None
            return []
        if part.suspected_end is None or log_end <= part.suspected_end[0]:
            if part.suspected_end is None:
                part.suspected_end = (log_end, asked_s)
            return []
        first_asked_s = part.suspected_end[1]
        part.suspected_end = None
        return self.truncated(partition, log_end, now, acked_before=first_asked_s)

    def first_unread_offset(self, partition: int) -> int | None:
        """The lowest offset of an acknowledged probe not yet read (nor found gone): where a reader moved off a
        truncated log has to go on from, so that nothing written since is skipped."""
        offsets = [p.offset for p in self._partitions[partition].probes.values() if p.state is _State.ACKED]
        return min((o for o in offsets if o is not None), default=None)

    def acked_offsets(self, partition: int, acked_before: float) -> tuple[int, int] | None:
        """(lowest, highest) offset acknowledged by `acked_before` and not yet found gone, among tracked probes;
        what the periodic log check compares with the partition's log start and end."""
        offsets = [
            p.offset
            for p in self._partitions[partition].probes.values()
            if p.offset is not None
            and p.state in (_State.ACKED, _State.CONSUMED)
            and not p.truncated
            and p.acked_s is not None
            and p.acked_s <= acked_before
        ]
        return (min(offsets), max(offsets)) if offsets else None

    def max_acked_offset(self, partition: int) -> int | None:
        """The highest offset acknowledged and still tracked, to compare with the high watermark."""
        offsets = [
            p.offset
            for p in self._partitions[partition].probes.values()
            if p.offset is not None and p.state in (_State.ACKED, _State.CONSUMED)
        ]
        return max(offsets, default=None)

    # ---- the clock ---------------------------------------------------------------------------------

    def expire(self, now: float) -> list[ProbeResult]:
        """Declare acknowledged probes past the loss deadline lost (rule 2) and forget old settled ones."""
        results: list[ProbeResult] = []
        for partition, part in self._partitions.items():
            for probe in list(part.probes.values()):
                acked_s = probe.acked_s if probe.acked_s is not None else probe.sent_s
                if probe.state is _State.ACKED and now - acked_s > self.loss_deadline_s:
                    results.append(self._settle(partition, probe, _State.LOST, now))
                elif probe.settled_s is not None and now - probe.settled_s > self.retain_s:
                    del part.probes[probe.sequence]
        return results

    def counts(self) -> dict[int, PartitionCounts]:
        return {partition: part.counts for partition, part in self._partitions.items()}

    def pending(self) -> int:
        """Probes not settled yet (in flight, or acknowledged and awaiting their read)."""
        return sum(1 for part in self._partitions.values() for p in part.probes.values() if p.settled_s is None)

    # ---- results -----------------------------------------------------------------------------------

    def _lose_unread(self, partition: int, gone: Callable[[int], bool], now: float) -> list[ProbeResult]:
        part = self._partitions[partition]
        return [
            self._settle(partition, probe, _State.LOST, now)
            for probe in sorted(part.probes.values(), key=lambda p: p.sequence)
            if probe.state is _State.ACKED and probe.offset is not None and gone(probe.offset)
        ]

    def _settle(self, partition: int, probe: _Probe, state: _State, now: float) -> ProbeResult:
        probe.state, probe.settled_s = state, now
        produced = probe.produce_latency_s is not None and probe.error is None
        consumed = state is _State.CONSUMED
        return self._result(
            partition,
            probe,
            produce_ok=produced,
            produce_latency_s=probe.produce_latency_s,
            consume_ok=None if state is _State.FAILED else consumed,
            e2e_latency_s=probe.read_s - probe.sent_s if consumed and probe.read_s is not None else None,
            lost=state is _State.LOST,
            out_of_order=probe.out_of_order,
            error=probe.error,
            offset=probe.offset,
        )

    def _duplicate(self, partition: int, probe: _Probe, offset: int, now: float) -> ProbeResult:
        return self._result(
            partition,
            probe,
            produce_ok=True,
            produce_latency_s=None,
            consume_ok=True,
            e2e_latency_s=now - probe.sent_s,
            duplicate=True,
            offset=offset,
        )

    def _result(
        self,
        partition: int,
        probe: _Probe,
        *,
        produce_ok: bool,
        produce_latency_s: float | None,
        consume_ok: bool | None,
        e2e_latency_s: float | None,
        lost: bool = False,
        duplicate: bool = False,
        out_of_order: bool = False,
        error: str | None = None,
        offset: int | None,
    ) -> ProbeResult:
        """A result of `probe`: what every result of it shares (where and by whom it was sent) and this outcome."""
        return ProbeResult(
            time=probe.sent_at,
            cluster=self.cluster,
            topic=self.topic,
            partition=partition,
            broker=probe.broker,
            rack=probe.rack,
            client_rack=self.client_rack,
            producer_id=self.producer_id,
            sequence=probe.sequence,
            produce_ok=produce_ok,
            produce_latency_s=produce_latency_s,
            consume_ok=consume_ok,
            e2e_latency_s=e2e_latency_s,
            lost=lost,
            duplicate=duplicate,
            out_of_order=out_of_order,
            error=error,
            offset=offset,
        )
