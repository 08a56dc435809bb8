"""The canary's picture of the monitor topic: partitions, their leaders, in-sync replicas and racks.

Refreshed by the service every `metadata_refresh_s`; read by the producer at each send to attribute the probe to
the leader (broker and rack) of that moment. Thread-safe: one writer, several readers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from canary.placement import TopicLayout


@dataclass(frozen=True)
class PartitionLeader:
    """Who a probe to this partition goes to, as far as the canary knows."""

    broker: int | None
    rack: str | None
    in_sync: frozenset[int]
    departed: frozenset[int] = frozenset()
    """Brokers that left this partition's leadership or in-sync set within `recent_s` of the question: a write
    sent now may still be held up by them (clients and leaders catch up with such a change over a moment)."""


class ClusterView:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._layout: TopicLayout | None = None
        self._racks: dict[int, str | None] = {}
        self._all_racks: dict[int, str | None] = {}
        self._departures: dict[int, dict[int, float]] = {}
        """Partition -> broker -> monotonic time it was last seen leaving the leadership or the in-sync set."""

    def update(
        self, layout: TopicLayout | None, racks: Mapping[int, str | None] | None = None, now: float = 0.0
    ) -> None:
        with self._lock:
            if self._layout is not None and layout is not None:
                for partition, leader in layout.leaders.items():
                    before = self._layout.leaders.get(partition)
                    was_in_sync = self._layout.in_sync.get(partition, frozenset())
                    left = set(was_in_sync - layout.in_sync.get(partition, frozenset()))
                    if before is not None and before != leader:
                        left.add(before)
                    departures = self._departures.setdefault(partition, {})
                    departures.update(dict.fromkeys(left, now))
            self._layout = layout
            if racks is not None:
                self._racks = dict(racks)
                self._all_racks.update(racks)  # a broker that went away keeps its rack label

    def partitions(self) -> list[int]:
        with self._lock:
            return sorted(self._layout.replicas) if self._layout is not None else []

    def leader(self, partition: int, now: float = 0.0, recent_s: float = 0.0) -> PartitionLeader:
        with self._lock:
            if self._layout is None:
                return PartitionLeader(None, None, frozenset())
            broker = self._layout.leaders.get(partition)
            rack = self._all_racks.get(broker) if broker is not None else None
            departures = self._departures.get(partition, {})
            departed = frozenset(b for b, since in departures.items() if now - since <= recent_s and b != broker)
            return PartitionLeader(broker, rack, self._layout.in_sync.get(partition, frozenset()), departed)

    def rack(self, broker: int) -> str | None:
        with self._lock:
            return self._all_racks.get(broker)

    def live_brokers(self) -> dict[int, str | None]:
        with self._lock:
            return dict(self._racks)

    def known_brokers(self) -> dict[int, str | None]:
        """Every broker seen since start (live or not), with its rack."""
        with self._lock:
            return dict(self._all_racks)

    def partitions_led(self) -> dict[int, int]:
        """Broker -> number of monitor partitions it leads now (0 for known brokers leading none)."""
        with self._lock:
            counts = dict.fromkeys(self._all_racks, 0)
            if self._layout is not None:
                for leader in self._layout.leaders.values():
                    if leader is not None:
                        counts[leader] = counts.get(leader, 0) + 1
            return counts
