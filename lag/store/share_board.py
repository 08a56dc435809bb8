"""The latest share-group verdicts per cluster (KIP-932), written by each cluster's share-group poller and read by
/metrics, the share-group routes and the status page. Judging happens here, once per read, with the read's time:
the stall rule needs each start offset's history, which only a running process has."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pulse.kafka.share_groups import ShareGroupsRead
from pulse.kafka.share_stall import ShareGroupVerdict, StartOffsetHistory


@dataclass(frozen=True)
class ShareReading:
    """One cluster's latest judged read."""

    verdicts: tuple[ShareGroupVerdict, ...]
    read_at_s: float
    """Wall-clock seconds of the read."""
    reason: str
    """Why the read is incomplete; empty when every share group was read."""


class ShareBoard:
    """Judged reads by cluster, behind a lock of its own (a read never waits on the commit store's)."""

    def __init__(self, stall_after_s: float) -> None:
        self.stall_after_s = stall_after_s
        self._lock = threading.Lock()
        self._history = StartOffsetHistory()
        self._latest: dict[str, ShareReading] = {}

    def record(self, cluster: str, read: ShareGroupsRead, now_s: float) -> ShareReading:
        """Judge `read` of `cluster` made at `now_s` and keep it as the cluster's latest. A read that failed as a
        whole (no groups, a reason) keeps the previous verdicts, with the new reason."""
        with self._lock:
            previous = self._latest.get(cluster)
            if read.reason and not read.groups and previous is not None:
                reading = ShareReading(previous.verdicts, previous.read_at_s, read.reason)
            else:
                verdicts = self._history.judge(cluster, read.groups, now_s, self.stall_after_s)
                reading = ShareReading(tuple(verdicts), now_s, read.reason)
            self._latest[cluster] = reading
            return reading

    def latest(self) -> dict[str, ShareReading]:
        """Every cluster's latest judged read."""
        with self._lock:
            return dict(self._latest)
