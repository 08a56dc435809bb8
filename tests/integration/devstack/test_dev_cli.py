"""`kafka-pulse dev up` / `status` / `down` as a user runs them: separate processes, state found again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pulse.polling import poll
from pulse.ports import is_listening
from pulse.process import pid_alive

pytestmark = pytest.mark.integration


def kafka_pulse(home: Path, *args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAFKA_PULSE_HOME": str(home)}
    return subprocess.run(["kafka-pulse", *args], env=env, capture_output=True, text=True, timeout=timeout_s)


def test_up_status_down_leaves_nothing_behind(tmp_path: Path) -> None:
    up = kafka_pulse(tmp_path, "dev", "up", "--brokers", "1")
    assert up.returncode == 0, up.stderr
    status = kafka_pulse(tmp_path, "dev", "status", "--json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    (broker,) = doc["brokers"]
    assert doc["bootstrap_servers"] == f"127.0.0.1:{broker['port']}"
    assert broker["rack"] == "az-a" and broker["running"] is True
    assert str(broker["port"]) in up.stdout and str(broker["jmx_port"]) in up.stdout

    again = kafka_pulse(tmp_path, "dev", "up", "--brokers", "1")
    assert again.returncode == 1 and "already running" in again.stderr

    state = json.loads((tmp_path / "dev" / "state.json").read_text())
    ports = [p for node in state["nodes"] for p in (node["port"], node["controller_port"], node["jmx_port"])]
    assert all(is_listening(p) for p in ports)

    down = kafka_pulse(tmp_path, "dev", "down")
    assert down.returncode == 0, down.stderr
    assert not pid_alive(broker["pid"])
    # The kernel may take a moment to release a closed listener; poll rather than sleep.
    poll(lambda: [p for p in ports if is_listening(p)], lambda bound: bound == [], 10, "every port released")
    assert not (tmp_path / "dev").exists()

    gone = kafka_pulse(tmp_path, "dev", "status", "--json")
    assert gone.returncode == 1 and "no dev cluster" in gone.stderr
