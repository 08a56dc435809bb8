"""The detector's pure parts: JMX families -> signals, probe rounds -> excess, quantiles."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from collectors.catalogue import Reading
from collectors.mapping import BrokerIdentity, map_readings
from collectors.slow_broker import BrokerProber, quantile, round_excess, send_order
from collectors.slow_broker_jmx import JMX_SETTLE_S, flush_totals, interval_flush_ms, jmx_signals, settled
from collectors.slow_broker_rules import WINDOWED, Signal
from pulse.config import SlowBrokersConfig


def _families(flushes: float = 7.0, mean_ms: float = 4.0) -> dict[str, object]:
    rm = "kafka.network:type=RequestMetrics,name=LocalTimeMs,request="
    readings = [
        Reading(rm + "Produce", "99thPercentile", 12.0),
        Reading(rm + "FetchFollower", "99thPercentile", 501.0),
        Reading(rm + "Produce", "50thPercentile", 2.0),
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile", 900.0),
        Reading("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "999thPercentile", 40.0),
        Reading("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "Count", flushes),
        Reading("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "Mean", mean_ms),
        Reading("kafka.network:type=RequestChannel,name=RequestQueueSize", "Value", 3.0),
        Reading("kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent", "Value", 0.9),
        Reading("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "OneMinuteRate", 0.75),
        Reading("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "MeanRate", 0.99),
    ]
    return dict(map_readings(readings, BrokerIdentity("c", 1, None)))


def test_jmx_signals_from_a_scrape() -> None:
    families = _families()
    got = jmx_signals(families, flush_ms=40.0)  # type: ignore[arg-type]
    assert got == {
        Signal.PRODUCE_P99: 12.0,
        Signal.FETCH_FOLLOWER_P99: 501.0,
        Signal.LOG_FLUSH_MEAN: 40.0,
        Signal.REQUEST_QUEUE: 3.0,
        Signal.NETWORK_BUSY: pytest.approx(0.1),
        Signal.HANDLER_BUSY: pytest.approx(0.25),  # the one-minute rate, not the mean since start
    }
    assert flush_totals(families) == (7.0, 28.0)  # type: ignore[arg-type]


def test_the_flush_signal_is_the_mean_of_the_intervals_flushes_only() -> None:
    """Ten flushes at 4 ms since start, then ten more averaging 1,504 ms (a stalled fsync): the interval's mean is
    1,504 ms although the mean since start is 754; once the disk is fast again the next interval's is 4 ms at once,
    where the reservoir's p99.9 kept the stall for many minutes."""
    healthy = flush_totals(_families(flushes=10, mean_ms=4.0))  # type: ignore[arg-type]
    stalled = flush_totals(_families(flushes=20, mean_ms=754.0))  # type: ignore[arg-type]
    recovered = flush_totals(_families(flushes=30, mean_ms=504.0))  # type: ignore[arg-type]
    assert interval_flush_ms(healthy, stalled) == pytest.approx(1504.0)
    assert interval_flush_ms(stalled, recovered) == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("before", "now"),
    [(None, (5.0, 20.0)), ((5.0, 20.0), None), ((5.0, 20.0), (5.0, 20.0)), ((500.0, 2000.0), (3.0, 12.0))],
    ids=["first-reading", "no-reading", "no-new-flush", "broker-restarted"],
)
def test_no_new_flush_gives_no_flush_signal(
    before: tuple[float, float] | None, now: tuple[float, float] | None
) -> None:
    assert interval_flush_ms(before, now) is None
    assert Signal.LOG_FLUSH_MEAN not in jmx_signals(_families(), interval_flush_ms(before, now))  # type: ignore[arg-type]


def test_missing_beans_are_missing_signals() -> None:
    assert jmx_signals({}) == {}


def test_every_broker_is_sent_to_last_in_turn() -> None:
    orders = [send_order([1, 2, 3], n) for n in range(1, 7)]
    assert orders == [[2, 3, 1], [3, 1, 2], [1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 2, 3]]
    assert {order[-1] for order in orders[:3]} == {1, 2, 3}
    assert send_order([], 5) == []


def test_round_excess_cancels_the_clients_own_pause() -> None:
    assert round_excess({1: 105.0, 2: 400.0, 3: 100.0}) == {1: 5.0, 2: 300.0, 3: 0.0}
    assert round_excess({}) == {}


@pytest.mark.parametrize(
    ("values", "q", "want"),
    [([1.0], 0.9, 1.0), ([float(v) for v in range(1, 21)], 0.9, 18.0), ([5.0, 1.0, 3.0], 0.5, 3.0)],
)
def test_quantile_nearest_rank(values: list[float], q: float, want: float) -> None:
    assert quantile(values, q) == want


def test_a_failed_evaluation_withdraws_the_previous_verdicts() -> None:
    """A detector round that raises leaves no verdict standing as current, on /metrics or the board; before, the
    previous round's verdicts stayed published."""
    from prometheus_client import CollectorRegistry

    from collectors.slow_broker import SlowBrokerCollector, SlowBrokerDetector
    from pulse.broker_health import BrokerHealthBoard
    from pulse.config import ClusterConfig, SlowBrokersConfig

    answers: list[list[int] | Exception] = [[1, 2], RuntimeError("metadata read crashed")]

    def brokers() -> list[int]:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    board = BrokerHealthBoard()
    cluster = ClusterConfig.model_validate({"name": "dev", "bootstrap_servers": ["127.0.0.1:1"]})
    detector = SlowBrokerDetector(cluster, brokers, {}, SlowBrokersConfig(), board)
    registry = CollectorRegistry()
    registry.register(SlowBrokerCollector({"dev": detector}))
    assert detector.evaluate_or_withdraw() is not None
    assert set(board.snapshot("dev")) == {1, 2}
    assert registry.get_sample_value("kafka_pulse_broker_slow", {"cluster": "dev", "broker": "1"}) == 0

    assert detector.evaluate_or_withdraw() is None
    assert detector.latest is None and dict(board.snapshot("dev")) == {}
    assert registry.get_sample_value("kafka_pulse_broker_slow", {"cluster": "dev", "broker": "1"}) is None
    assert detector.failed_evaluations == 1


def test_windowed_jmx_signals_wait_out_the_reservoir_after_a_failed_scrape() -> None:
    signals = jmx_signals(_families())  # type: ignore[arg-type]
    assert WINDOWED & set(signals)
    assert settled(signals, JMX_SETTLE_S) == signals
    kept = settled(signals, JMX_SETTLE_S - 1)
    assert not WINDOWED & set(kept)
    assert kept == {s: v for s, v in signals.items() if s not in WINDOWED}


class _Admin:
    """Stands in for librdkafka's Admin client: hands out futures the test answers."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []

    def poll(self, timeout: float) -> int:
        return 0

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        future: Future[Any] = Future()
        self.futures.append(future)
        return {resources[0]: future}


def _prober() -> tuple[BrokerProber, list[_Admin]]:
    made: list[_Admin] = []

    def make() -> Any:
        made.append(_Admin())
        return made[-1]

    return BrokerProber(make, lambda: [1, 2], SlowBrokersConfig(interval_s=15, probe_timeout_s=5)), made


def _answer_late(prober: BrokerProber, admin: _Admin, late_s: float) -> None:
    """Answer every probe of `admin` with an error, as if `late_s` after it was sent."""
    for probes in prober._rounds.values():
        for probe in probes.values():
            probe.sent_s -= late_s
    for future in admin.futures:
        future.set_exception(RuntimeError("Local: Timed out"))


@pytest.mark.parametrize(
    ("late_s", "age_s", "renewed"),
    [(5.0, 15.0, True), (5.0, 1.0, False), (0.1, 15.0, False)],
    ids=["timed-out-and-old", "timed-out-but-young", "quick-error"],
)
def test_a_probe_client_whose_probes_time_out_is_replaced_once_an_interval(
    late_s: float, age_s: float, renewed: bool
) -> None:
    prober, made = _prober()
    prober.fire()
    _answer_late(prober, made[0], late_s)
    prober._created_s -= age_s
    prober.fire()
    assert (len(made), prober.renewals) == ((2, 1) if renewed else (1, 0))
    prober.fire()  # a renewal is due only after a new timeout
    assert len(made) == (2 if renewed else 1)
