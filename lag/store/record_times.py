"""The timestamps of records at committed offsets, read by the exact-lag reader (`lag/ingest/exact_lag.py`) and
turned into seconds behind where verdicts are enriched: stored state, so it sits with the store."""

from __future__ import annotations

RecordKey = tuple[str, str, int, int]
"""(cluster, topic, partition, offset) of a record whose timestamp is looked up."""


class RecordTimes:
    """Record timestamps by (cluster, topic, partition, offset), least recently used dropped beyond `capacity`.

    A committed offset's record never changes, so each is read once while it stays in the cache.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._times: dict[RecordKey, int] = {}

    def get(self, key: RecordKey) -> int | None:
        ts = self._times.pop(key, None)
        if ts is not None:
            self._times[key] = ts  # most recently used goes last
        return ts

    def put(self, key: RecordKey, timestamp_ms: int) -> None:
        self._times.pop(key, None)
        self._times[key] = timestamp_ms
        while len(self._times) > self.capacity:
            del self._times[next(iter(self._times))]

    def __contains__(self, key: object) -> bool:
        return key in self._times

    def __len__(self) -> int:
        return len(self._times)
