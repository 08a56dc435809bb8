"""The canary's per-broker latencies as slow-broker signals: where `run` joins the canary to the collectors' detector.

The detector (collectors/) may not import the canary, so the application layer reads the canary's produce and
end-to-end histograms at each evaluation, takes the interval's increase per leader broker and hands its p99 over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from collectors import Signal

QUANTILE = 0.99

Buckets = dict[float, float]
"""Upper bound (le) -> cumulative count."""


def bucket_quantile(buckets: Mapping[float, float], q: float) -> float | None:
    """The `q` quantile of a cumulative histogram's counts, interpolated linearly in its bucket as Prometheus'
    histogram_quantile does (pure); None when it holds no observation. Above the last finite bound: that bound."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    total = buckets[bounds[-1]]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside > 0 else 1.0)
        lower, below = bound, count
    return lower


def _per_broker(samples: Iterable[Any], skip_replica: str | None) -> dict[int, Buckets]:
    """Sum each broker's `_bucket` samples over its other labels (rack, client rack, replica read from)."""
    out: dict[int, Buckets] = {}
    for sample in samples:
        labels = sample.labels
        if not sample.name.endswith("_bucket") or not labels.get("broker", "").isdigit():
            continue
        if skip_replica is not None and labels.get("replica") == skip_replica:
            continue
        buckets = out.setdefault(int(labels["broker"]), {})
        le = float(labels["le"])
        buckets[le] = buckets.get(le, 0.0) + sample.value
    return out


def increase(now: Mapping[int, Buckets], before: Mapping[int, Buckets]) -> dict[int, Buckets]:
    """Per broker, the counts added since `before` (a counter reset counts from zero)."""
    out = {}
    for broker, buckets in now.items():
        old = before.get(broker, {})
        delta = {le: count - old.get(le, 0.0) for le, count in buckets.items()}
        out[broker] = delta if all(v >= 0 for v in delta.values()) else dict(buckets)
    return out


class CanaryLatencyFeed:
    """`ExtraSignals` for the detector: the p99 of the canary's produce and e2e latency since the last call, in ms,
    per leader broker; nothing for a cluster the canary does not probe, or before the canary runs."""

    def __init__(self, canary: Callable[[], Any | None]) -> None:
        self._canary = canary
        """Returns the running CanaryService (or None): the canary is added after the collectors."""
        self._lock = threading.Lock()
        self._before: dict[Signal, dict[int, Buckets]] = {}

    def __call__(self, cluster: str) -> Mapping[int, Mapping[Signal, float]]:
        service = self._canary()
        if service is None or service.cluster.name != cluster:
            return {}
        histograms: Sequence[tuple[Signal, Any, str | None]] = (
            (Signal.CANARY_PRODUCE, service.metrics.produce_latency, None),
            (Signal.CANARY_E2E, service.metrics.e2e_latency, "closest"),
        )
        out: dict[int, dict[Signal, float]] = {}
        with self._lock:
            for signal, histogram, skip in histograms:
                now = _per_broker((s for m in histogram.collect() for s in m.samples), skip)
                for broker, delta in increase(now, self._before.get(signal, {})).items():
                    p99 = bucket_quantile(delta, QUANTILE)
                    if p99 is not None:
                        out.setdefault(broker, {})[signal] = p99 * 1000
                self._before[signal] = now
        return out
