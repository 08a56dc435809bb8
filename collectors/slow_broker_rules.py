"""Slow-broker scoring (pure): per-broker signals -> elevated against own history and peers -> hysteresis -> verdicts.

Rules, after Cruise Control's SlowBrokerFinder but stricter where its users found it noisy:
1. A signal is elevated only when its value is above its floor AND above `history_factor` x the broker's own history
   median AND above `peer_factor` x the median of the other brokers' current values (medians: one outlier moves
   neither). A broker with too little history is judged against its peers only (rule 7 excepted); a lone broker
   against its history.
2. A broker's score is its worst signal's ratio (1.0 = exactly at the bar); it looks slow in this evaluation when
   any signal is elevated. A missing signal is not judged; a broker with none at all is unknown (no streak moves).
3. Hysteresis: flagged once `enter_after` of the last `enter_after` + 1 evaluations were slow (one noisy clean
   evaluation does not restart the count; alternating slow and clean never flags), cleared once `clear_after` of the
   last `clear_after` + 1 were clean, the latest among them (one noisy slow evaluation does not restart the clearing,
   which after a 30 s SIGSTOP held a flag 7 minutes on a loaded host; alternating never clears).
4. When more than max(1, `max_slow_fraction` x brokers) look slow at once, no flag is raised or cleared: the cluster
   or the client is slow, and the verdict says so; a signal above its own history on that many brokers is named as
   a cluster-wide rise in every reason (peers' medians rise with it, so it singles nobody out).
5. History only takes values above neither bar (own history x factor, peers x factor), and none while the broker
   is flagged, so a slow spell never becomes the broker's normal, even when noisy peers let some of its values pass.
6. Warm-up: a broker's first `min_history` judged evaluations are shown (score, reason, history) but count toward no
   flag. With no history yet, a verdict rests on one comparison with the peers' current values, the noisiest there
   is: on a loaded 2-core host a healthy broker's probe p90 swung 56-401 ms between intervals and was x3.5 its two
   peers' median in the detector's first interval, enough for a false flag at x3 (docs/testing.md, "No reruns").
   After warm-up a broker without history (slow from the start, so nothing was remembered) is judged on its peers.
7. A WINDOWED signal (a broker-side percentile or rate over a past window) without own history is not judged (score
   0; its peer test still keeps values out of history, rule 5): its first values hold minutes the detector did not
   watch (a cluster's start-up, an earlier outage), and a healthy broker's JMX p99 read x3 its peers' after rule 6's
   warm-up, which the probe ends an evaluation before the first JMX scrape lands (docs/testing.md, "No reruns").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum


class Signal(StrEnum):
    """A per-broker signal; the value is the label exported with the score and the word the reason uses."""

    PROBE_RTT = "probe_rtt_ms"
    """p90 over the interval of the broker's probe answer time (DescribeConfigs) beyond each probe round's fastest
    broker, ms: the client's view, free of replication and of the client's own pauses."""
    CANARY_PRODUCE = "canary_produce_ms"
    """The canary's produce latency (p99 over the interval) to partitions the broker leads, ms."""
    CANARY_E2E = "canary_e2e_ms"
    """The canary's end-to-end latency (p99 over the interval) through partitions the broker leads, ms."""
    PRODUCE_P99 = "produce_local_p99_ms"
    """Produce RequestMetrics LocalTimeMs 99thPercentile, ms: the leader's own append. Not TotalTimeMs: with acks=all
    that waits for the followers, so one slow follower makes every healthy leader's Produce p99 rise."""
    FETCH_FOLLOWER_P99 = "fetch_follower_local_p99_ms"
    """FetchFollower RequestMetrics LocalTimeMs 99thPercentile, ms: the leader's log read for its followers. Not
    TotalTimeMs, which is mostly the fetch's long-poll wait (replica.fetch.wait.max.ms)."""
    HANDLER_BUSY = "request_handler_busy"
    """1 - RequestHandlerAvgIdlePercent (one-minute rate): the share of time request handlers work."""
    NETWORK_BUSY = "network_processor_busy"
    """1 - NetworkProcessorAvgIdlePercent."""
    REQUEST_QUEUE = "request_queue_size"
    """Requests waiting for a handler (RequestChannel RequestQueueSize)."""
    LOG_FLUSH_MEAN = "log_flush_mean_ms"
    """Mean time of the log flushes done since the last evaluation, ms (from LogFlushRateAndTimeMs Count and Mean).
    Not the 999thPercentile Cruise Control reads: Yammer's reservoir keeps a stall's samples for many minutes after
    the disk recovered, so a flag on it did not clear within 10 minutes (docs/benchmarks.md)."""


class FloorKind(StrEnum):
    LATENCY = "latency"
    FLUSH = "flush"
    BUSY = "busy"
    QUEUE = "queue"


FLOOR_OF: Mapping[Signal, FloorKind] = {
    Signal.PROBE_RTT: FloorKind.LATENCY,
    Signal.CANARY_PRODUCE: FloorKind.LATENCY,
    Signal.CANARY_E2E: FloorKind.LATENCY,
    Signal.PRODUCE_P99: FloorKind.LATENCY,
    Signal.FETCH_FOLLOWER_P99: FloorKind.LATENCY,
    Signal.HANDLER_BUSY: FloorKind.BUSY,
    Signal.NETWORK_BUSY: FloorKind.BUSY,
    Signal.REQUEST_QUEUE: FloorKind.QUEUE,
    Signal.LOG_FLUSH_MEAN: FloorKind.FLUSH,
}
"""Which floor each signal is held to."""

WINDOWED = frozenset({Signal.PRODUCE_P99, Signal.FETCH_FOLLOWER_P99, Signal.NETWORK_BUSY, Signal.HANDLER_BUSY})
"""Signals that average or sample a past window on the broker; the queue size and the interval's flush time do not."""

PRODUCE_SIDE = (Signal.CANARY_PRODUCE, Signal.PRODUCE_P99)
"""Where a broker's produce latency is read from, best first (the board's `produce_latency_ms`)."""


@dataclass(frozen=True)
class Thresholds:
    """The rules' parameters (from `slow_brokers:` in the config)."""

    floors: Mapping[FloorKind, float]
    history_factor: float = 3.0
    peer_factor: float = 3.0
    history_len: int = 40
    min_history: int = 4
    enter_after: int = 3
    clear_after: int = 8
    max_slow_fraction: float = 0.1

    def floor(self, signal: Signal) -> float:
        return self.floors[FLOOR_OF[signal]]

    def max_slow(self, brokers: int) -> int:
        """Rule 4: how many brokers may look slow at once before detection stops."""
        return max(1, int(self.max_slow_fraction * brokers))


@dataclass(frozen=True)
class Judgement:
    """One signal of one broker in one evaluation."""

    signal: Signal
    value: float
    history: float | None
    """Median of the broker's own past values; None while it has fewer than `min_history`."""
    peers: float | None
    """Median of the other brokers' current values; None when no other broker has this signal."""
    score: float
    """Rule 1's ratio: the value over the highest bar it must pass (floor, history x factor, peers x factor)."""
    above_history: bool
    above_peers: bool

    @property
    def elevated(self) -> bool:
        return self.score >= 1.0


@dataclass(frozen=True)
class BrokerState:
    """What the rules remember of a broker between evaluations."""

    history: Mapping[Signal, tuple[float, ...]] = field(default_factory=dict)
    slow_streak: int = 0
    """Slow evaluations among the last `enter_after` + 1."""
    flagged: bool = False
    recent: tuple[bool, ...] = ()
    """Whether each of the last max(`enter_after`, `clear_after`) + 1 evaluations was slow, oldest first."""
    judged: int = 0
    """Evaluations that judged a signal of this broker, counted up to `min_history` (rule 6: warm-up below it)."""


@dataclass(frozen=True)
class Verdict:
    """One broker's outcome of one evaluation."""

    broker: int
    flagged: bool
    score: float
    slow_now: bool
    """Any signal elevated in this evaluation (before hysteresis)."""
    reason: str
    judgements: tuple[Judgement, ...]
    """Worst first."""
    state: BrokerState


@dataclass(frozen=True)
class Evaluation:
    verdicts: Mapping[int, Verdict]
    suspended: bool
    """Rule 4 fired: too many brokers looked slow at once."""


def _bar(base: float | None, factor: float) -> float | None:
    return None if base is None else base * factor


def judge(signal: Signal, value: float, own: tuple[float, ...], peers: list[float], th: Thresholds) -> Judgement:
    """Rules 1 and 7 for one signal of one broker."""
    history = statistics.median(own) if len(own) >= th.min_history else None
    peer = statistics.median(peers) if peers else None
    floor = th.floor(signal)
    above_history = history is not None and value >= floor and value >= history * th.history_factor
    above_peers = peer is not None and value >= floor and value >= peer * th.peer_factor
    judged_peer = peer if history is not None or signal not in WINDOWED else None  # rule 7
    bars = [b for b in (_bar(history, th.history_factor), _bar(judged_peer, th.peer_factor)) if b is not None]
    if not bars:
        return Judgement(signal, value, history, peer, 0.0, False, above_peers)
    bar = max(floor, *bars)
    score = value / bar if bar > 0 else (float("inf") if value > 0 else 0.0)
    return Judgement(signal, value, history, peer, score, above_history, above_peers)


def _fmt(signal: Signal, value: float | None) -> str:
    if value is None:
        return "-"
    if signal.value.endswith("_ms"):
        return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def describe(j: Judgement) -> str:
    """`probe_rtt_ms 240 ms (own history 3.1 ms, peers' median 2.9 ms; x2.4)`: the numbers `check` shows."""
    return (
        f"{j.signal.value} {_fmt(j.signal, j.value)} (own history {_fmt(j.signal, j.history)}, "
        f"peers' median {_fmt(j.signal, j.peers)}; x{j.score:.1f})"
    )


def _remember(state: BrokerState, judgements: tuple[Judgement, ...], th: Thresholds) -> dict[Signal, tuple[float, ...]]:
    history = dict(state.history)
    if state.flagged:
        return history
    for j in judgements:
        if not (j.above_history or j.above_peers):
            history[j.signal] = (*history.get(j.signal, ()), j.value)[-th.history_len :]
    return history


def evaluate(
    signals: Mapping[int, Mapping[Signal, float]], states: Mapping[int, BrokerState], th: Thresholds
) -> Evaluation:
    """Rules 1-5 for one evaluation of one cluster: every broker in `signals` or `states` gets a verdict."""
    brokers = sorted(set(signals) | set(states))
    judged: dict[int, tuple[Judgement, ...]] = {}
    for broker in brokers:
        own = signals.get(broker, {})
        found = []
        for signal, value in own.items():
            peers = [signals[b][signal] for b in brokers if b != broker and signal in signals.get(b, {})]
            found.append(judge(signal, value, states.get(broker, BrokerState()).history.get(signal, ()), peers, th))
        judged[broker] = tuple(sorted(found, key=lambda j: -j.score))
    slow = [b for b in brokers if any(j.elevated for j in judged[b])]
    suspended = len(slow) > th.max_slow(len(brokers))
    wide = _cluster_wide(judged, th)
    verdicts = {}
    for broker in brokers:
        state = states.get(broker, BrokerState())
        rows = judged[broker]
        slow_now = broker in slow
        score = rows[0].score if rows else 0.0
        history = _remember(state, rows, th)
        warm = min(th.min_history, state.judged + 1) if rows else state.judged
        if not rows:
            new = replace(state, history=history)
            reason = "unknown: no signal for this broker in this evaluation"
        elif suspended:
            new = replace(state, history=history, judged=warm)
            reason = (
                f"not judged: {len(slow)} of {len(brokers)} brokers look slow at once (brokers "
                f"{', '.join(map(str, slow))}), so the cluster or the client is slow, not one broker; "
                f"worst here: {describe(rows[0])}"
            )
        elif state.judged < th.min_history:
            new = replace(state, history=history, judged=warm)
            reason = _warm_up_reason(rows, warm, th) + wide
        else:
            new = _step(replace(state, history=history, judged=warm), slow_now, th)
            reason = _reason(rows, new, slow_now, th) + wide
        verdicts[broker] = Verdict(broker, new.flagged, score, slow_now, reason, rows, new)
    return Evaluation(verdicts, suspended)


def _cluster_wide(judged: Mapping[int, tuple[Judgement, ...]], th: Thresholds) -> str:
    """Signals above their own history on too many brokers at once: a cluster-wide rise, named in every reason
    (peers' medians rise with it, so no broker is singled out for it)."""
    counts: dict[Signal, int] = {}
    for rows in judged.values():
        for j in rows:
            if j.above_history:
                counts[j.signal] = counts.get(j.signal, 0) + 1
    wide = [f"{s.value} on {n} of {len(judged)}" for s, n in sorted(counts.items()) if n > th.max_slow(len(judged))]
    return f"; cluster-wide rise above own history (the cluster or the client): {', '.join(wide)}" if wide else ""


def _step(state: BrokerState, slow_now: bool, th: Thresholds) -> BrokerState:
    """Rule 3: flagged at `enter_after` slow of the last `enter_after` + 1, cleared at `clear_after` clean of the last
    `clear_after` + 1 with this one clean, so one noisy evaluation neither restarts a flag's count nor its clearing."""
    recent = (*state.recent, slow_now)[-(max(th.enter_after, th.clear_after) + 1) :]
    slow = sum(recent[-(th.enter_after + 1) :])
    if slow_now:
        flagged = state.flagged or slow >= th.enter_after
        return replace(state, slow_streak=slow, flagged=flagged, recent=recent)
    clean = _clean_of_window(recent, th)
    flagged = state.flagged and clean < th.clear_after
    return replace(state, slow_streak=slow, flagged=flagged, recent=recent)


def _clean_of_window(recent: tuple[bool, ...], th: Thresholds) -> int:
    """Clean evaluations among the last `clear_after` + 1."""
    return sum(1 for slow in recent[-(th.clear_after + 1) :] if not slow)


def _warm_up_reason(rows: tuple[Judgement, ...], judged: int, th: Thresholds) -> str:
    """Rule 6: what the warm-up evaluation saw, which raises no flag."""
    elevated = [j for j in rows if j.elevated]
    seen = "; ".join(describe(j) for j in elevated) if elevated else f"worst {describe(rows[0])}"
    return f"warming up, evaluation {judged} of {th.min_history} (no flag before its history): {seen}"


def _reason(rows: tuple[Judgement, ...], state: BrokerState, slow_now: bool, th: Thresholds) -> str:
    elevated = [j for j in rows if j.elevated]
    if elevated:
        what = "; ".join(describe(j) for j in elevated)
        if state.flagged:
            return f"slow: {what}"
        window = th.enter_after + 1
        return f"elevated in {state.slow_streak} of the last {window} evaluations ({th.enter_after} flag): {what}"
    if state.flagged:
        clean, window = _clean_of_window(state.recent, th), th.clear_after + 1
        return (
            f"recovering, clean {clean} of the last {window} evaluations ({th.clear_after} clear): "
            f"worst {describe(rows[0])}"
        )
    return f"ok: worst {describe(rows[0])}"


def produce_side(verdict: Verdict) -> tuple[float | None, bool]:
    """The broker's produce latency (canary first, else Produce p99) and whether it is above history or peers."""
    by_signal = {j.signal: j for j in verdict.judgements}
    for signal in PRODUCE_SIDE:
        j = by_signal.get(signal)
        if j is not None:
            return j.value, j.above_history or j.above_peers
    return None, False
