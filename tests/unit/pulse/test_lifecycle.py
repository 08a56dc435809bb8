"""Parts start in order and stop in reverse (also when one fails to start), run_until_signal stops them on
SIGTERM and gives the signal handlers back, a stop signal ends a streaming command's wait between triggers, and a
Periodic loop outlives its failing ticks and stops promptly."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest

from pulse.lifecycle import Part, Parts, Periodic, run_until_signal, stop_on_signals, wait_stopped
from pulse.ports import wait_until


class Recorder:
    def __init__(self, name: str, log: list[str], fail_start: bool = False) -> None:
        self.name, self.log, self.fail_start = name, log, fail_start

    def start(self) -> None:
        if self.fail_start:
            raise RuntimeError(f"{self.name} cannot start")
        self.log.append(f"start {self.name}")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")


def test_parts_start_in_order_and_stop_in_reverse() -> None:
    log: list[str] = []
    parts = Parts([Part(n, Recorder(n, log)) for n in ("http", "lag", "canary")])
    assert not parts.running
    parts.start()
    assert parts.running
    parts.stop()
    parts.stop()  # twice is harmless
    assert log == ["start http", "start lag", "start canary", "stop canary", "stop lag", "stop http"]


def test_a_part_failing_to_start_stops_those_before_it() -> None:
    log: list[str] = []
    parts = Parts([Part("http", Recorder("http", log)), Part("lag", Recorder("lag", log, fail_start=True))])
    with pytest.raises(RuntimeError, match="lag cannot start"):
        parts.start()
    assert log == ["start http", "stop http"]


def test_run_until_signal_stops_on_sigterm_and_restores_the_handlers() -> None:
    log: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    parts = Parts([Part("http", Recorder("http", log))])
    run_until_signal(parts, lambda: os.kill(os.getpid(), signal.SIGTERM))
    assert log == ["start http", "stop http"]
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_sent_from_another_thread_ends_the_wait_and_the_handlers_come_back(sig: int) -> None:
    """As `slo stream` and `audit reconcile` wait between triggers: the signal sets the event (no KeyboardInterrupt,
    no death by SIGTERM), the wait ends then, not at the trigger, and the handlers are the previous ones."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with stop_on_signals() as stopped:
        assert not wait_stopped(stopped, 0.05)  # nothing sent: the wait runs out and says so
        sender = threading.Timer(0.2, os.kill, (os.getpid(), sig))
        sender.start()
        assert wait_stopped(stopped, 3600)  # the signal's doing: the hour would outlast the suite's 600 s timeout
        sender.join()
    assert {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} == before


def test_a_periodic_loop_ticks_until_stopped_and_stop_is_idempotent() -> None:
    ticks: list[float] = []
    loop = Periodic("test-loop", 0.01, lambda: ticks.append(time.monotonic()), clock=lambda: 1234.5)
    assert not loop.is_alive() and loop.last_success_s is None
    loop.start()
    try:
        assert wait_until(lambda: len(ticks) >= 3, 30, interval_s=0.01), ticks
        assert loop.is_alive()
        assert "test-loop" in {t.name for t in threading.enumerate()}
        with pytest.raises(RuntimeError, match="test-loop is already running"):
            loop.start()
    finally:
        assert loop.stop(30)
    assert not loop.is_alive()
    assert loop.stop(30)  # twice is harmless
    assert (loop.failures, loop.ticks >= 3) == (0, True)
    assert loop.last_success_s == 1234.5
    done = loop.ticks
    loop.start()  # a stopped loop starts again
    try:
        assert wait_until(lambda: loop.ticks > done, 30, interval_s=0.01)
    finally:
        assert loop.stop(30)


def test_a_tick_that_raises_is_counted_logged_once_redacted_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def tick() -> None:
        calls.append(1)
        if len(calls) <= 3:
            raise ConnectionError("POST https://pulse:s3cret@alerts.example/api failed")

    caplog.set_level(logging.ERROR, logger="pulse.lifecycle")
    loop = Periodic("flaky", 0.01, tick)
    loop.start()
    try:
        assert wait_until(lambda: loop.last_success_s is not None and loop.ticks >= 5, 30, interval_s=0.01)
        assert loop.is_alive()
    finally:
        loop.stop(30)
    assert loop.failures == 3
    assert loop.last_error == "ConnectionError: POST https://***@alerts.example/api failed"
    lines = [r.getMessage() for r in caplog.records if r.name == "pulse.lifecycle"]
    failed = "ConnectionError: POST https://***@alerts.example/api failed"
    assert lines == [f"flaky: tick failed: {failed}; the loop goes on"]
    assert all(r.exc_info is not None for r in caplog.records if r.name == "pulse.lifecycle")  # the traceback too


def test_a_tick_returning_false_is_a_failure_it_reported_itself(caplog: pytest.LogCaptureFixture) -> None:
    outcomes = iter([False, True])
    loop = Periodic("self-reporting", 3600, lambda: next(outcomes))
    assert not loop.tick_once()
    assert loop.tick_once()
    assert (loop.ticks, loop.failures, loop.last_success_s is not None) == (2, 1, True)
    assert not [r for r in caplog.records if r.name == "pulse.lifecycle"]


def test_stop_interrupts_a_long_interval_and_a_tick_waiting_on_stopping() -> None:
    entered = threading.Event()
    loop: Periodic

    def tick() -> None:
        entered.set()
        loop.stopping.wait(3600)  # an interruptible wait inside the tick, as the canary's commit probe does

    loop = Periodic("patient", 3600, tick)
    loop.start()
    assert entered.wait(30)
    started = time.monotonic()
    assert loop.stop(30)
    assert time.monotonic() - started < 10  # generous: the hour-long waits were cut short, not waited out
    assert loop.ticks == 1


def test_a_first_delay_passes_before_the_first_tick_and_stop_cuts_it_short() -> None:
    ticks: list[int] = []
    loop = Periodic("delayed", 0.01, lambda: ticks.append(1), first_delay_s=3600)
    loop.start()
    assert loop.is_alive()
    assert loop.stop(30)
    assert ticks == []


def test_a_failed_tick_pauses_the_loop_for_failure_pause_s() -> None:
    calls: list[int] = []

    def tick() -> None:
        calls.append(1)
        raise RuntimeError("broken")

    loop = Periodic("no-interval", 0, tick, failure_pause_s=3600)
    loop.start()
    try:
        assert wait_until(lambda: loop.failures >= 1, 30, interval_s=0.01)
        assert loop.is_alive()
    finally:
        assert loop.stop(30)  # the failure pause, too, is cut short
    assert calls == [1]  # no spinning on a lasting fault


def test_a_wall_aligned_loop_ticks_on_multiples_of_its_interval() -> None:
    """The lag evaluation log's cycles land at :00, :15, :30, :45 of the clock, the first one included."""
    ticks: list[float] = []
    clock_s = [1_000.0]
    loop = Periodic("aligned", 15.0, lambda: ticks.append(clock_s[0]), wall_aligned=True, clock=lambda: clock_s[0])
    assert loop.until_aligned_s() == pytest.approx(5.0)  # 1,000 s -> the next multiple of 15 is 1,005
    clock_s[0] = 1_004.5
    assert loop.until_aligned_s() == pytest.approx(0.5)
    clock_s[0] = 1_005.0
    assert loop.until_aligned_s() == pytest.approx(15.0)  # on a tick: the next one, never a zero wait
    loop.start()
    try:
        assert loop.is_alive()
        assert ticks == []  # waiting for the next multiple, not ticking at once
    finally:
        assert loop.stop(30)
