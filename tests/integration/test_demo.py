"""The README's run command, `bash scripts/demo.sh`, end to end: it does its own set-up (setup.sh
is quick when everything is installed), starts a 3-broker cluster, real traffic (a producer and three consumer
groups), Prometheus, Alertmanager and `kafka-pulse run`, prints where to look (the status page first), shows an OK,
a lagging and a stopped group and SLO events within 2 minutes, and on SIGTERM tears all of it down, leaving no
process behind.

Its state goes to a temporary `KAFKA_PULSE_HOME`; every process it starts inherits that variable, which is how the
test finds anything left running.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.services import poll
from devstack.traffic import KEEPS_UP, STOPS, TOO_SLOW
from pulse.process import pid_alive, stop_pid
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SUMMARY_END = "demo: Ctrl-C (or SIGTERM) stops everything"
VERDICT = re.compile(r"^(OK|WARN|CRIT|UNKNOWN)\b.*\(exit \d", re.MULTILINE)
URL_LINE = re.compile(r"^  (status page|metrics|lag API|Prometheus|Alertmanager): +(\S+)$", re.MULTILINE)
SHOWS_WITHIN_S = 120.0
"""The demo's promise: OK, lagging and stopped groups and SLO events within 2 minutes of its summary."""


def group_view(lag_api: str) -> dict[str, tuple[str, set[str]]]:
    """Each demo group's Burrow v3 status and its partitions' statuses (`.../lag` lists them all)."""
    view = {}
    for group in (KEEPS_UP, TOO_SLOW, STOPS):
        answer = httpx.get(f"{lag_api}/dev/consumer/{group}/lag", timeout=30, trust_env=False)
        status: dict[str, Any] = answer.json().get("status") or {}
        view[group] = (str(status.get("status")), {str(p["status"]) for p in status.get("partitions", [])})
    return view


def shows_the_three_groups(view: dict[str, tuple[str, set[str]]]) -> bool:
    """Keeping up: OK, every partition OK; too slow: WARN or ERR; stopped: a partition STOP."""
    return view[KEEPS_UP] == ("OK", {"OK"}) and view[TOO_SLOW][0] in {"WARN", "ERR"} and "STOP" in view[STOPS][1]


def slo_events(metrics_url: str) -> float:
    """The demo SLO's events in its window, from the gauge `run` serves after each evaluation (0 before one)."""
    body = httpx.get(metrics_url, timeout=30, trust_env=False).text
    found = re.search(r'^kafka_pulse_slo_events\{[^}]*slo="canary-produce-availability"[^}]*\} (\S+)$', body, re.M)
    return float(found.group(1)) if found else 0.0


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
        summary_at = time.monotonic()
        found = URL_LINE.findall(text)
        assert found and found[0][0] == "status page", text[-3000:]  # the page is the first place to look
        urls = dict(found)
        assert set(urls) == {"status page", "metrics", "lag API", "Prometheus", "Alertmanager"}, text[-3000:]
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
        left_s = SHOWS_WITHIN_S - (time.monotonic() - summary_at)
        view = poll(
            lambda: group_view(urls["lag API"]), shows_the_three_groups, left_s, "OK, lagging and stopped groups"
        )
        assert view[KEEPS_UP][0] == "OK" and view[STOPS][0] in {"ERR", "WARN"}, view
        left_s = SHOWS_WITHIN_S - (time.monotonic() - summary_at)
        assert poll(lambda: slo_events(urls["metrics"]), lambda n: n > 0, max(left_s, 1.0), "SLO events", 2.0) > 0

        owned = json.loads((home / "demo" / "pids.json").read_text())
        clients = {"producer-perf-demo-producer", *(f"consumer-perf-{g}" for g in (KEEPS_UP, TOO_SLOW, STOPS))}
        assert {"run", "prometheus", "alertmanager", "kafka-1", "kafka-2", "kafka-3"} | clients <= set(owned)
        finished = f"consumer-perf-{STOPS}"  # read its records and exited: that is how its group stops
        assert all(pid_alive(pid) for name, pid in owned.items() if name != finished), owned
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
