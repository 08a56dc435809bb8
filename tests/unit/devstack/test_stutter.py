"""`devstack.stutter`: a real child process is stopped and continued in a cycle and always left running."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.stutter import Stutter, StutterPlan
from pulse.errors import ClusterError, ConfigError
from pulse.polling import poll


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize(
    ("stop_ms", "period_ms", "duration_s", "message"),
    [
        pytest.param(0, 1000, None, "--stop-ms: 0 must be > 0", id="no-stop"),
        pytest.param(300, 300, None, "--period-ms: 300 must exceed --stop-ms 300", id="never-runs"),
        pytest.param(300, 1000, 0.0, "--for: 0.0 must be > 0 seconds", id="no-duration"),
    ],
)
def test_plan_refuses_bad_values(stop_ms: int, period_ms: int, duration_s: float | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StutterPlan(stop_ms, period_ms, duration_s)


def test_process_is_stopped_then_left_running(child: subprocess.Popen[bytes]) -> None:
    stutter = Stutter(child.pid, StutterPlan(stop_ms=400, period_ms=500)).start()
    try:
        poll(lambda: _state(child.pid), lambda state: state == "T", 5, "the child stopped", interval_s=0.01)
        poll(lambda: _state(child.pid), lambda state: state != "T", 5, "the child running again", interval_s=0.01)
    finally:
        stutter.stop()
    assert stutter.cycles >= 1
    assert _state(child.pid) != "T"


def test_duration_ends_it_running(child: subprocess.Popen[bytes]) -> None:
    stutter = Stutter(child.pid, StutterPlan(stop_ms=50, period_ms=100, duration_s=0.5))
    started = time.monotonic()
    cycles = stutter.run()
    assert cycles >= 1
    assert time.monotonic() - started < 5
    assert _state(child.pid) != "T"


def test_stop_during_a_pause_resumes(child: subprocess.Popen[bytes]) -> None:
    stutter = Stutter(child.pid, StutterPlan(stop_ms=60_000, period_ms=61_000)).start()
    poll(lambda: _state(child.pid), lambda state: state == "T", 5, "the child stopped", interval_s=0.01)
    stutter.stop()
    assert _state(child.pid) != "T"


def test_gone_process_is_refused() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)
    with pytest.raises(ClusterError, match=f"process {proc.pid} is not running"):
        Stutter(proc.pid, StutterPlan(100, 200))
