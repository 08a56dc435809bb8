"""The mirror's replication lag: `MirrorLag` (pure) follows each acknowledged probe until its copy is read on the
target, and `MirrorLedger` feeds it from the core ledger's events."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime

from canary.availability import AvailabilityWindow
from canary.events import SinkFanout
from canary.ledger import Ledger
from canary.tracker import Tracker
from canary.view import PartitionLeader


@dataclass
class _Pending:
    sent_s: float
    acked: bool = False


@dataclass
class MirrorLag:
    """Probes acknowledged on the source and not yet read on the target, per source partition (pure; the clock is
    an argument). Unlike the tracker it does not settle a probe at the loss deadline: a late copy still ends the
    lag, so the lag grows for as long as the mirror is stalled and falls once it catches up.

    Rules:
      1. lag(p) = now - send time of the oldest acknowledged, unread probe of p; 0 when there is none.
      2. A failed produce never counts (it cannot be mirrored); a read before the acknowledgement ends the probe.
      3. A probe unread after `retain_s` is forgotten (counted in `given_up`), bounding memory through long outages.
    """

    retain_s: float
    _probes: dict[int, dict[int, _Pending]] = field(default_factory=dict)
    given_up: int = 0

    def sent(self, partition: int, sequence: int, now: float) -> None:
        self._probes.setdefault(partition, {})[sequence] = _Pending(now)

    def acked(self, partition: int, sequence: int) -> None:
        probe = self._probes.get(partition, {}).get(sequence)
        if probe is not None:
            probe.acked = True

    def ended(self, partition: int, sequence: int) -> None:
        """The probe failed, or its copy was read on the target (rule 2)."""
        self._probes.get(partition, {}).pop(sequence, None)

    def lag_s(self, now: float) -> dict[int, float]:
        """Rule 1 for every partition probed so far; probes are kept in send order, so the first acked is oldest."""
        lags: dict[int, float] = {}
        for partition, probes in self._probes.items():
            oldest = next((p.sent_s for p in probes.values() if p.acked), None)
            lags[partition] = 0.0 if oldest is None else max(0.0, now - oldest)
        return lags

    def forget(self, now: float) -> None:
        """Rule 3; probes are kept in send order, so the scan stops at the first young one."""
        for probes in self._probes.values():
            old = []
            for sequence, probe in probes.items():
                if now - probe.sent_s <= self.retain_s:
                    break
                old.append(sequence)
            for sequence in old:
                del probes[sequence]
            self.given_up += len(old)


class MirrorLedger(Ledger):
    """The core ledger, also telling `MirrorLag` what the producer and the target consumer saw."""

    def __init__(self, tracker: Tracker, window: AvailabilityWindow, sinks: SinkFanout, lag: MirrorLag) -> None:
        super().__init__(tracker, window, sinks)
        self.lag = lag
        self._lag_lock = threading.Lock()

    def sent(self, partition: int, sequence: int, now: float, sent_at: datetime, leader: PartitionLeader) -> None:
        super().sent(partition, sequence, now, sent_at, leader)
        with self._lag_lock:
            self.lag.sent(partition, sequence, now)

    def acked(self, partition: int, sequence: int, offset: int, latency_s: float, now: float) -> None:
        super().acked(partition, sequence, offset, latency_s, now)
        with self._lag_lock:
            self.lag.acked(partition, sequence)

    def failed(self, partition: int, sequence: int, error: str, now: float) -> None:
        super().failed(partition, sequence, error, now)
        with self._lag_lock:
            self.lag.ended(partition, sequence)

    def arrived(self, partition: int, sequence: int, offset: int, now: float) -> None:
        super().arrived(partition, sequence, offset, now)
        with self._lag_lock:
            self.lag.ended(partition, sequence)

    def lag_s(self, now: float) -> dict[int, float]:
        with self._lag_lock:
            self.lag.forget(now)
            return self.lag.lag_s(now)
