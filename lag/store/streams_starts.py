"""Streams groups and the log start offsets of their input partitions, per cluster, for the lag of a partition a
streams group has not committed on yet: Kafka counts it from the log start (`kafka-streams-groups --describe`
prints end minus earliest), where Burrow's placeholder says 0. Replaced whole by each HWM round (lag/ingest/hwm.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class StreamsStarts:
    """Per cluster: which groups are streams groups, and the log start of each of their input partitions."""

    def __init__(self) -> None:
        self._groups: dict[str, frozenset[str]] = {}
        self._starts: dict[str, dict[tuple[str, int], int]] = {}

    def replace(self, cluster: str, groups: Iterable[str], starts: Mapping[tuple[str, int], int]) -> None:
        """The cluster's streams groups and their input partitions' log starts as one round read them."""
        self._groups[cluster] = frozenset(groups)
        self._starts[cluster] = dict(starts)

    def groups(self, cluster: str) -> frozenset[str]:
        return self._groups.get(cluster, frozenset())

    def start(self, cluster: str, topic: str, partition: int) -> int | None:
        """The partition's log start offset as last read; None when not read (not a streams group's input)."""
        starts = self._starts.get(cluster)
        return starts.get((topic, partition)) if starts is not None else None


def uncommitted_lag(hwm: int | None, start: int | None) -> int | None:
    """A streams group's lag on a partition it never committed: from the log start to the HWM, as Kafka's tool
    counts it (Streams reads internal topics, and by default its inputs, from the earliest offset); None when
    either offset is unknown."""
    if hwm is None or start is None:
        return None
    return max(hwm - start, 0)
