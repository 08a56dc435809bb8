"""Parts start in order and stop in reverse (also when one fails to start), and run_until_signal stops them on
SIGTERM and gives the signal handlers back."""

from __future__ import annotations

import os
import signal

import pytest

from pulse.lifecycle import Part, Parts, run_until_signal


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
