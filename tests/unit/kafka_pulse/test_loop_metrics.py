"""Every periodic loop's ticks and failed ticks on /metrics (kafka_pulse/runner/heartbeat.py `LoopCollector`)."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, generate_latest

from kafka_pulse.runner.heartbeat import LoopCollector
from pulse.lifecycle import Periodic
from pulse.polling import poll


def test_a_failing_loop_counts_its_failed_ticks() -> None:
    calls = {"n": 0}
    done = threading.Event()

    def tick() -> bool:
        calls["n"] += 1
        if calls["n"] >= 4:
            done.set()
        return calls["n"] % 2 == 0  # every other tick fails

    loop = Periodic("test-flapping-loop", 0.001, tick)
    registry = CollectorRegistry()
    registry.register(LoopCollector())
    loop.start()
    try:
        poll(done.is_set, bool, timeout_s=10, what="four ticks")
    finally:
        assert loop.stop()
    text = generate_latest(registry).decode()
    assert f'kafka_pulse_loop_ticks_total{{loop="test-flapping-loop"}} {float(loop.ticks)}' in text
    assert f'kafka_pulse_loop_tick_failures_total{{loop="test-flapping-loop"}} {float(loop.failures)}' in text
    assert loop.failures >= 2
