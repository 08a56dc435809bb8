"""Slow-broker detection for one cluster: signals from the JMX scrapes, a per-broker request probe and whatever the
application layer feeds in (the canary) -> `slow_broker_rules.evaluate` every interval -> the board and /metrics.

Why a probe of its own: with acks=all a slow follower delays every leader's produce (broker-side Produce p99 and the
canary's produce latency rise on the healthy brokers too), so the direct per-broker answer time is what singles the
slow one out. A DescribeConfigs of broker N is answered by broker N alone, from memory, over the admin connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectors.scrapers import BrokerScraper
from collectors.slow_broker_jmx import JMX_SETTLE_S, FlushTotals, flush_totals, interval_flush_ms, jmx_signals, settled
from collectors.slow_broker_rules import (
    BrokerState,
    Evaluation,
    FloorKind,
    Signal,
    Thresholds,
    Verdict,
    evaluate,
    produce_side,
)
from pulse.broker_health import BrokerHealthBoard, BrokerSlowness
from pulse.config import ClusterConfig, SlowBrokersConfig
from pulse.lifecycle import Periodic
from pulse.profile import admin_config

_LOG = logging.getLogger(__name__)
_CLIENT_LOG = logging.getLogger(f"{__name__}.librdkafka")
"""The probe client's librdkafka lines (served by `poll(0)` each round), not its stderr."""

ExtraSignals = Callable[[str], Mapping[int, Mapping[Signal, float]]]
"""cluster -> broker -> signal values the application layer adds (the canary's per-broker latencies)."""

PROBE_QUANTILE = 0.9
"""The probe signal is this quantile of the interval's samples: a broker stopped 30 % of the time puts ~20 % of its
probes above the floor, enough for the p90 and far from a healthy broker's one unlucky sample."""


def thresholds(config: SlowBrokersConfig) -> Thresholds:
    return Thresholds(
        floors={
            FloorKind.LATENCY: config.latency_floor_ms,
            FloorKind.FLUSH: config.flush_floor_ms,
            FloorKind.BUSY: config.busy_floor,
            FloorKind.QUEUE: config.queue_floor,
        },
        history_factor=config.history_factor,
        peer_factor=config.peer_factor,
        history_len=config.history_evaluations,
        min_history=config.min_history,
        enter_after=config.enter_after,
        clear_after=config.clear_after,
        max_slow_fraction=config.max_slow_fraction,
    )


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile by nearest rank (pure; `values` non-empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))]


def round_excess(latencies: Mapping[int, float]) -> dict[int, float]:
    """One probe round's answer times less the round's fastest (pure): what the client adds to every probe of a
    round (its own CPU starvation, a GIL pause) cancels out, what one broker adds stays."""
    if not latencies:
        return {}
    fastest = min(latencies.values())
    return {b: ms - fastest for b, ms in latencies.items()}


def send_order(brokers: list[int], round_number: int) -> list[int]:
    """The brokers rotated by the round number (pure): whatever the client adds between one send and the next (a
    GIL handover to a busy thread) falls on every broker in turn, never on the last one sent to."""
    if not brokers:
        return []
    shift = round_number % len(brokers)
    return brokers[shift:] + brokers[:shift]


@dataclass
class _Probe:
    sent_s: float
    """Monotonic time just before this probe's own request was handed to the client."""
    ms: float | None = None
    """Answer time; None while unanswered."""


class BrokerProber:
    """Rounds of DescribeConfigs, one to each broker at once, `probes_per_interval` rounds an interval; each
    broker's answer time beyond the round's fastest, in ms.

    Each probe is timed from its own send. Timed from the round's start, the brokers sent to later carried the
    client's own delays between sends: with three busy threads in the process, the third send of a round started
    20 ms (median) to 69 ms (p90) after the first on a lightly loaded host, enough to make a healthy broker sent to
    last look slow under CI load (docs/testing.md, "No reruns")."""

    def __init__(self, admin: Callable[[], AdminClient], brokers: Callable[[], list[int]], config: SlowBrokersConfig):
        self._admin_factory = admin
        self._admin: AdminClient | None = None
        self._brokers = brokers
        self._config = config
        self._lock = threading.Lock()
        self._rounds: dict[int, dict[int, _Probe]] = {}
        """Round number -> broker -> its probe."""
        self._next = 0
        self._created_s = 0.0
        self._timed_out = False
        """A probe timed out since the client was made: it is replaced at the next round an interval after its start."""
        self.renewals = 0

    def fire(self) -> None:
        """Send one round: a probe to every broker at once (each on its own future, timed from its own send)."""
        timeout_s = self._config.probe_timeout_s
        if self._admin is not None and self._renewal_due():
            self._admin = None
            self.renewals += 1
        if self._admin is None:
            self._admin = self._admin_factory()  # created on the first round: `configure` connects to nothing
            self._created_s = time.monotonic()
        self._admin.poll(0)  # serves its queued log lines
        brokers = self._brokers()
        resources = {b: ConfigResource(ResourceType.BROKER, str(b)) for b in brokers}
        with self._lock:
            self._next += 1
            number = self._next
            probes: dict[int, _Probe] = {}
            self._rounds[number] = probes
        for broker in send_order(brokers, number):
            probe = _Probe(time.monotonic())
            with self._lock:
                probes[broker] = probe
            resource = resources[broker]
            try:
                future = self._admin.describe_configs([resource], request_timeout=timeout_s)[resource]
            except Exception as exc:  # a local refusal: the probe stays unanswered and counts at its age
                _LOG.debug("probe of broker %s not sent: %s", broker, exc)
                continue
            future.add_done_callback(self._answered(probe))

    def _answered(self, probe: _Probe) -> Callable[[Future[Any]], None]:
        def done(future: Future[Any]) -> None:
            ms = (time.monotonic() - probe.sent_s) * 1000
            cap = self._config.probe_timeout_s * 1000
            failed = future.exception() is not None
            with self._lock:
                probe.ms = max(ms, cap) if failed else ms  # an error answer is no latency; a timeout the worst one
                self._timed_out = self._timed_out or (failed and ms >= cap)

        return done

    def _renewal_due(self) -> bool:
        """A probe timed out and the client is an interval old: the next round uses a new one. A broker back from a
        hang was once probed in vain for 5 minutes by a client that kept timing out (docs/benchmarks.md, "Soak"); a
        new client on a still-hung broker times out the same way, so nothing is hidden."""
        with self._lock:
            due = self._timed_out and time.monotonic() - self._created_s >= self._config.interval_s
            if due:
                self._timed_out = False
            return due

    def take(self) -> dict[int, float]:
        """The interval's probe signal per broker: the p90 of its excess over each round's fastest answer; probes
        still unanswered count at their age so far (a hung broker is as slow as its oldest question)."""
        now = time.monotonic()
        cap = self._config.probe_timeout_s * 1000
        excess: dict[int, list[float]] = {}
        with self._lock:
            rounds, self._rounds = self._rounds, {}
            answers = [{b: (p.ms, p.sent_s) for b, p in probes.items()} for probes in rounds.values()]
        for answer in answers:
            latencies = {
                b: (ms if ms is not None else min(cap, (now - sent) * 1000)) for b, (ms, sent) in answer.items()
            }
            for broker, ms in round_excess(latencies).items():
                excess.setdefault(broker, []).append(ms)
        return {b: quantile(values, PROBE_QUANTILE) for b, values in excess.items() if values}


@dataclass(frozen=True)
class Published:
    """The detector's latest evaluation, for /metrics."""

    evaluation: Evaluation
    finished_s: float


class SlowBrokerDetector:
    """One cluster's detector: a thread that probes, and every `interval_s` gathers the signals and evaluates."""

    def __init__(
        self,
        cluster: ClusterConfig,
        brokers: Callable[[], list[int]],
        scrapers: Mapping[int, BrokerScraper],
        config: SlowBrokersConfig,
        board: BrokerHealthBoard,
        extra: ExtraSignals | None = None,
        client_settings: Mapping[str, Any] | None = None,
    ) -> None:
        """`client_settings` go to the probe's Admin client (the process's librdkafka log limiter)."""
        self.cluster = cluster.name
        self._brokers = brokers
        self._scrapers = scrapers
        self.config = config
        self.thresholds = thresholds(config)
        self.board = board
        self._extra = extra
        settings: dict[str, Any] = {**admin_config(cluster), "client.id": "kafka-pulse-slow-brokers"}
        settings.update(client_settings if client_settings is not None else {"logger": _CLIENT_LOG})
        self.prober = BrokerProber(lambda: AdminClient(settings), brokers, config)
        self.states: dict[int, BrokerState] = {}
        self.latest: Published | None = None
        self.last_signals: dict[int, dict[Signal, float]] = {}
        """The signal values of the latest evaluation."""
        self._flushes: dict[int, FlushTotals] = {}
        """Each broker's flush totals at the last evaluation."""
        self._scrape_failed_s: dict[int, float] = {}
        """Each broker's last failed scrape seen by an evaluation (monotonic)."""
        self.evaluations = 0
        self._next_eval_s = 0.0
        # One probe round every `step`, an evaluation every `interval_s`; one bad round must not end detection.
        step = config.interval_s / config.probes_per_interval
        self._loop = Periodic(f"slow-brokers-{self.cluster}", step, self._round)
        self.failed_evaluations = 0
        """Evaluations that raised (each withdrew the previous verdicts)."""
        self.evaluated = threading.Condition()
        """Notified after every evaluation (tests await it instead of sleeping)."""

    def signals(self) -> dict[int, dict[Signal, float]]:
        out: dict[int, dict[Signal, float]] = {b: {} for b in self._brokers()}
        now = time.monotonic()
        for broker, scraper in self._scrapers.items():
            result = scraper.result
            if result is not None and result.ok and result.value is not None:
                totals = flush_totals(result.value)
                flush_ms = interval_flush_ms(self._flushes.get(broker), totals)
                if totals is not None:
                    self._flushes[broker] = totals
                since_gap_s = now - self._scrape_failed_s.get(broker, -JMX_SETTLE_S)
                out.setdefault(broker, {}).update(settled(jmx_signals(result.value, flush_ms), since_gap_s))
            elif result is not None:
                self._scrape_failed_s[broker] = now
        for broker, ms in self.prober.take().items():
            out.setdefault(broker, {})[Signal.PROBE_RTT] = ms
        if self._extra is not None:
            try:
                extra = self._extra(self.cluster)
            except Exception:  # the canary's numbers are a bonus; their absence must not stop detection
                _LOG.exception("slow-broker detector %s: extra signals failed", self.cluster)
                extra = {}
            for broker, values in extra.items():
                out.setdefault(broker, {}).update(values)
        return out

    def evaluate_once(self) -> Evaluation:
        signals = self.signals()
        self.last_signals = signals
        evaluation = evaluate(signals, self.states, self.thresholds)
        self.states = {b: v.state for b, v in evaluation.verdicts.items()}
        published = {}
        for broker, verdict in evaluation.verdicts.items():
            latency, elevated = produce_side(verdict)
            published[broker] = BrokerSlowness(
                broker, verdict.flagged, verdict.score, verdict.reason, latency, elevated
            )
        self.board.publish(self.cluster, published)
        with self.evaluated:
            self.latest = Published(evaluation, time.time())
            self.evaluations += 1
            self.evaluated.notify_all()
        return evaluation

    def _round(self) -> None:
        """Fire one probe round; evaluate when the interval has passed (a late round skips, never bursts)."""
        interval = self.config.interval_s
        started = time.monotonic()
        self.prober.fire()
        if started >= self._next_eval_s:
            self._next_eval_s += interval * max(1, int((started - self._next_eval_s) // interval) + 1)
            self.evaluate_or_withdraw()

    def evaluate_or_withdraw(self) -> Evaluation | None:
        """`evaluate_once`; when it raises, the previous evaluation is withdrawn (from /metrics and the board: no
        verdict rather than an old one passed off as current), the failure counted and logged, and None returned."""
        try:
            return self.evaluate_once()
        except Exception:
            self.board.publish(self.cluster, {})
            with self.evaluated:
                self.latest = None
                self.failed_evaluations += 1
                self.evaluated.notify_all()
            _LOG.exception("slow-broker detector %s: evaluation failed; its previous verdicts withdrawn", self.cluster)
            return None

    def start(self) -> None:
        self._next_eval_s = time.monotonic() + self.config.interval_s
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop(10)


class SlowBrokerCollector(Collector):
    """`kafka_pulse_broker_slow*` families from each detector's latest evaluation (docs/metrics.md)."""

    def __init__(self, detectors: Mapping[str, SlowBrokerDetector]) -> None:
        self.detectors = detectors

    def collect(self) -> Iterator[Metric]:
        b, s = ("cluster", "broker"), ("cluster", "broker", "signal")
        slow = GaugeMetricFamily("kafka_pulse_broker_slow", "1 while the broker is flagged slow, else 0.", labels=b)
        score = GaugeMetricFamily(
            "kafka_pulse_broker_slow_score",
            "The broker's worst signal against its own history and its peers (>= 1: elevated).",
            labels=b,
        )
        reason = GaugeMetricFamily(
            "kafka_pulse_broker_slow_reason",
            "1 for the broker's verdict reason: its worst elevated signal, or ok, suspended, unknown.",
            labels=(*b, "reason"),
        )
        sig_score = GaugeMetricFamily(
            "kafka_pulse_broker_slow_signal_score", "One signal's ratio to the bar it must pass.", labels=s
        )
        value = GaugeMetricFamily("kafka_pulse_broker_slow_signal_value", "One signal's current value.", labels=s)
        peers = GaugeMetricFamily(
            "kafka_pulse_broker_slow_signal_peers", "The other brokers' median of the signal.", labels=s
        )
        history = GaugeMetricFamily(
            "kafka_pulse_broker_slow_signal_history", "The broker's own history median of the signal.", labels=s
        )
        suspended = GaugeMetricFamily(
            "kafka_pulse_broker_slow_detection_suspended",
            "1 when too many brokers looked slow at once to single one out.",
            labels=("cluster",),
        )
        evaluations = CounterMetricFamily(
            "kafka_pulse_broker_slow_evaluations", "Slow-broker evaluations done.", labels=("cluster",)
        )
        for cluster, detector in sorted(self.detectors.items()):
            evaluations.add_metric((cluster,), detector.evaluations)
            latest = detector.latest
            if latest is None:
                continue
            suspended.add_metric((cluster,), 1.0 if latest.evaluation.suspended else 0.0)
            for broker, verdict in sorted(latest.evaluation.verdicts.items()):
                labels = (cluster, str(broker))
                slow.add_metric(labels, 1.0 if verdict.flagged else 0.0)
                score.add_metric(labels, verdict.score)
                reason.add_metric((*labels, _reason_label(verdict, latest.evaluation)), 1.0)
                for j in verdict.judgements:
                    sl = (*labels, j.signal.value)
                    sig_score.add_metric(sl, j.score)
                    value.add_metric(sl, j.value)
                    if j.peers is not None:
                        peers.add_metric(sl, j.peers)
                    if j.history is not None:
                        history.add_metric(sl, j.history)
        yield from (slow, score, reason, sig_score, value, peers, history, suspended, evaluations)


def _reason_label(verdict: Verdict, evaluation: Evaluation) -> str:
    if not verdict.judgements:
        return "unknown"
    if evaluation.suspended:
        return "suspended"
    elevated = [j for j in verdict.judgements if j.elevated]
    if elevated:
        return str(elevated[0].signal.value)
    if verdict.flagged:
        return "recovering"
    return "ok"
