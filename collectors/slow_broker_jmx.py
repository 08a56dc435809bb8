"""The slow-broker signals one broker's JMX scrape gives (pure): request percentiles, idle ratios, the request queue
and the interval's mean flush time, and which of them to leave out while a broker's windows still hold an outage."""

from __future__ import annotations

from collections.abc import Mapping

from collectors.mapping import Family
from collectors.slow_broker_rules import WINDOWED, Signal

_REQUEST = "kafka_network_requestmetrics_localtimems"
_FLUSH_COUNT = "kafka_log_logflushstats_logflushrateandtimems_count"
_FLUSH_MEAN = "kafka_log_logflushstats_logflushrateandtimems_mean"
_QUEUE = "kafka_network_requestchannel_requestqueuesize"
_NETWORK_IDLE = "kafka_network_socketserver_networkprocessoravgidle_percent"
_HANDLER_IDLE = "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_one_minute_percent"


def _sample(families: Mapping[str, Family], name: str, **want: str) -> float | None:
    family = families.get(name)
    if family is None:
        return None
    for sample in family.samples:
        labels = dict(sample.labels)
        if all(labels.get(k) == v for k, v in want.items()):
            return sample.value
    return None


FlushTotals = tuple[float, float]
"""(log flushes timed, their total time in ms) since the broker started."""


def flush_totals(families: Mapping[str, Family]) -> FlushTotals | None:
    """A broker's flush count and total flush time: Yammer's timer Mean is its sum / count since start."""
    count, mean = _sample(families, _FLUSH_COUNT), _sample(families, _FLUSH_MEAN)
    return None if count is None or mean is None else (count, count * mean)


def interval_flush_ms(before: FlushTotals | None, now: FlushTotals | None) -> float | None:
    """The mean time of the flushes between two readings (pure); None without a new flush, or when the count went
    back (the broker restarted): no flush in the interval says nothing about the disk."""
    if before is None or now is None or now[0] <= before[0]:
        return None
    return max(0.0, (now[1] - before[1]) / (now[0] - before[0]))


def jmx_signals(families: Mapping[str, Family], flush_ms: float | None = None) -> dict[Signal, float]:
    """The signals one broker's latest JMX scrape carries (pure); absent beans give absent signals. `flush_ms` is
    the interval's mean flush time (`interval_flush_ms`), which one scrape cannot give."""
    found: dict[Signal, float | None] = {
        Signal.PRODUCE_P99: _sample(families, _REQUEST, request="Produce", quantile="0.99"),
        Signal.FETCH_FOLLOWER_P99: _sample(families, _REQUEST, request="FetchFollower", quantile="0.99"),
        Signal.LOG_FLUSH_MEAN: flush_ms,
        Signal.REQUEST_QUEUE: _sample(families, _QUEUE),
    }
    for signal, name in ((Signal.NETWORK_BUSY, _NETWORK_IDLE), (Signal.HANDLER_BUSY, _HANDLER_IDLE)):
        idle = _sample(families, name)
        found[signal] = None if idle is None else max(0.0, 1.0 - idle)
    return {s: v for s, v in found.items() if v is not None}


JMX_SETTLE_S = 300.0
"""How long a broker's windowed JMX signals are not judged after its scrape failed (a restart, a hang): Kafka's
request percentiles come from a reservoir biased to the last ~5 minutes, so they show the outage itself that long."""


def settled(signals: Mapping[Signal, float], since_gap_s: float) -> dict[Signal, float]:
    """`signals` without the windowed ones while the broker's last scrape failure is under JMX_SETTLE_S old (pure):
    its canary and probe signals still judge it then."""
    if since_gap_s >= JMX_SETTLE_S:
        return dict(signals)
    return {s: v for s, v in signals.items() if s not in WINDOWED}
