"""The slow-broker board: the detector publishes each cluster's per-broker verdicts here, others read them in-process.

The collectors' slow-broker detector writes after every evaluation; the noisy-neighbour diagnosis, `check` and the
status page read a snapshot. It lives in the base so readers in other components need not import the detector.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["BrokerHealthBoard", "BrokerSlowness"]


@dataclass(frozen=True)
class BrokerSlowness:
    """One broker's slow-broker verdict at the detector's last evaluation."""

    broker: int
    """The broker (node) id."""
    slow: bool
    """True while the broker is flagged (after the entry hysteresis, until the exit hysteresis clears it)."""
    score: float
    """The detector's score: 0 when nothing is elevated; above its threshold counts as one slow evaluation."""
    reason: str
    """Why, in words: the worst signals against the broker's history and its peers, or why nothing was judged."""
    produce_latency_ms: float | None
    """The broker's current produce-side latency in ms (canary produce, else Produce request p99); None if unseen."""
    produce_latency_elevated: bool
    """Produce-side latency above the broker's own history or its peers even if not yet flagged."""


class BrokerHealthBoard:
    """A thread-safe board: publish(cluster, brokers) replaces that cluster's verdicts; snapshot(cluster) reads them.

    publish(cluster: str, brokers: Mapping[int, BrokerSlowness]) -> None
    snapshot(cluster: str) -> Mapping[int, BrokerSlowness]  (empty when unknown)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clusters: dict[str, Mapping[int, BrokerSlowness]] = {}

    def publish(self, cluster: str, brokers: Mapping[int, BrokerSlowness]) -> None:
        """Replace the cluster's verdicts with `brokers` (a copy is kept, so the caller may reuse its dict)."""
        frozen = MappingProxyType(dict(brokers))
        with self._lock:
            self._clusters[cluster] = frozen

    def snapshot(self, cluster: str) -> Mapping[int, BrokerSlowness]:
        """The cluster's latest verdicts by broker id; empty when the detector has published nothing for it."""
        with self._lock:
            return self._clusters.get(cluster, MappingProxyType({}))

    def clusters(self) -> tuple[str, ...]:
        """The clusters published so far, sorted."""
        with self._lock:
            return tuple(sorted(self._clusters))
