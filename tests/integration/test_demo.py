"""The README's run command, `bash scripts/demo.sh`, end to end: it does its own set-up (setup.sh
is quick when everything is installed), starts a 3-broker cluster, Prometheus, Alertmanager and `kafka-pulse run`,
prints where to look, and on SIGTERM tears all of it down, leaving no process behind.

Its state goes to a temporary `KAFKA_PULSE_HOME`; every process it starts inherits that variable, which is how the
test finds anything left running.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from devstack.services import poll
from pulse.process import pid_alive, stop_pid
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SUMMARY_END = "demo: Ctrl-C (or SIGTERM) stops everything"
VERDICT = re.compile(r"^(OK|WARN|CRIT|UNKNOWN)\b.*\(exit \d", re.MULTILINE)


def processes_with(marker: bytes) -> list[int]:
    """PIDs whose environment holds `marker` (an env assignment), read from /proc."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


def test_demo_starts_everything_says_where_to_look_and_leaves_nothing_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    marker = f"KAFKA_PULSE_HOME={home}".encode()
    env = {**os.environ, "KAFKA_PULSE_HOME": str(home)}
    env.pop("KAFKA_PULSE_CONFIG", None)
    out_path = tmp_path / "demo.out"
    register_log("demo.sh", out_path)
    with out_path.open("wb") as out:
        demo = subprocess.Popen(
            ["bash", str(REPO / "scripts" / "demo.sh")],
            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    try:
        text = poll(
            out_path.read_text,
            lambda t: VERDICT.search(t.split(SUMMARY_END, 1)[-1]) is not None or demo.poll() is not None,
            900,
            "the demo's where-to-look summary and its first check",
        )
        assert demo.poll() is None, text[-3000:]
        urls = dict(re.findall(r"^  (metrics|lag API|Prometheus|Alertmanager): +(\S+)$", text, re.MULTILINE))
        assert set(urls) == {"metrics", "lag API", "Prometheus", "Alertmanager"}, text[-3000:]
        assert f"KAFKA_PULSE_HOME={home} kafka-pulse check --config {home / 'demo' / 'pulse.yaml'}" in text

        body = httpx.get(urls["metrics"], timeout=30, trust_env=False).text
        for family in ("kafka_pulse_cluster_state_up{", "kafka_pulse_lag_source_up{", "kafka_pulse_canary_"):
            assert family in body, family
        assert httpx.get(urls["lag API"], timeout=30, trust_env=False).json()["clusters"] == ["dev"]
        poll(
            lambda: httpx.get(
                urls["Prometheus"] + "/api/v1/query", params={"query": 'up{job="kafka-pulse"}'}, timeout=30
            ).json()["data"]["result"],
            lambda result: [r["value"][1] for r in result] == ["1"],
            120,
            "Prometheus scraping kafka-pulse run",
        )
        owned = json.loads((home / "demo" / "pids.json").read_text())
        assert {"run", "prometheus", "alertmanager", "kafka-1", "kafka-2", "kafka-3"} <= set(owned)
        assert all(pid_alive(pid) for pid in owned.values()), owned
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            code = demo.wait(timeout=600)
        except subprocess.TimeoutExpired:
            demo.kill()
            code = demo.wait()
        left = processes_with(marker)
        for pid in left:  # never leak into the rest of the run, whatever the assertions say
            stop_pid(pid, grace_s=5)
    text = out_path.read_text()
    assert code == 143, text[-3000:]  # bash's exit for SIGTERM, after its EXIT trap cleaned up
    assert left == [], f"left running: {left}"
    assert not [name for name, pid in owned.items() if pid_alive(pid)]
    assert "dev cluster stopped" in text and text.rstrip().endswith("demo: stopped")
