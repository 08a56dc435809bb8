"""The latest streams-group read per cluster (KIP-1071), written by each cluster's streams-group poller and read by
/metrics and the streams-group routes. Nothing is judged over time here: NOT_READY and a stale topology epoch are
facts of one describe (pulse/kafka/streams_groups.py), and input-topic lag is the evaluator's."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pulse.kafka.streams_groups import StreamsGroup, StreamsGroupsRead


@dataclass(frozen=True)
class StreamsReading:
    """One cluster's latest read."""

    groups: tuple[StreamsGroup, ...]
    read_at_s: float
    """Wall-clock seconds of the read."""
    reason: str
    """Why the read is incomplete; empty when every streams group was read."""


class StreamsBoard:
    """Reads by cluster, behind a lock of its own (a read never waits on the commit store's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, StreamsReading] = {}

    def record(self, cluster: str, read: StreamsGroupsRead, now_s: float) -> StreamsReading:
        """Keep `read` of `cluster` made at `now_s` as the cluster's latest. A read that failed as a whole (no
        groups, a reason) keeps the previous groups, with the new reason."""
        with self._lock:
            previous = self._latest.get(cluster)
            if read.reason and not read.groups and previous is not None:
                reading = StreamsReading(previous.groups, previous.read_at_s, read.reason)
            else:
                reading = StreamsReading(read.groups, now_s, read.reason)
            self._latest[cluster] = reading
            return reading

    def latest(self) -> dict[str, StreamsReading]:
        """Every cluster's latest read."""
        with self._lock:
            return dict(self._latest)

    def members(self, cluster: str) -> dict[str, int]:
        """`cluster`'s streams groups with their member counts, as last read (none before a read): admin ingestion
        fetches their commits, which its group listing does not return."""
        with self._lock:
            reading = self._latest.get(cluster)
            return {g.group: len(g.members) for g in reading.groups} if reading is not None else {}

    def inputs(self, cluster: str) -> dict[str, tuple[str, ...]]:
        """`cluster`'s streams groups with their source topics (repartition topics included), as last read: the
        HWM rounds read those partitions' log starts."""
        with self._lock:
            reading = self._latest.get(cluster)
            return {g.group: tuple(g.source_topics) for g in reading.groups} if reading is not None else {}
