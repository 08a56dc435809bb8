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

from devstack.traffic import KEEPS_UP, STOPS, TOO_SLOW
from pulse.polling import poll
from pulse.process import pid_alive, stop_pid
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
SUMMARY_END = "demo: Ctrl-C (or SIGTERM) stops everything"
VERDICT = re.compile(r"^(OK|WARN|CRIT|UNKNOWN)\b.*\(exit \d", re.MULTILINE)
URL_LINE = re.compile(r"^  (status page|metrics|lag API|Prometheus|Alertmanager): +(\S+)$", re.MULTILINE)
SHOWS_WITHIN_S = 120.0
"""The demo's promise: OK, lagging and stopped groups and SLO events within 2 minutes of its summary."""


def api_status(page_url: str) -> dict[str, Any]:
    """The status page's JSON, as a script reads it (docs/status-page.md)."""
    answer: dict[str, Any] = httpx.get(page_url + "api/status", timeout=30, trust_env=False).json()
    return answer


def demo_groups(status: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Group -> (Burrow group status, worst partition status) for the dev cluster's groups."""
    return {g["group"]: (g["status"], g["worst_partition_status"]) for g in status.get("groups") or []}


def slo_events(status: dict[str, Any]) -> float:
    """The demo SLO's events in its window at the latest evaluation (0 before one)."""
    return sum(float(s["total"] or 0) for s in status.get("slos") or [] if s["name"] == "canary-produce-availability")


def shows_everything(status: dict[str, Any]) -> bool:
    """Keeping up: OK throughout; too slow: WARN or ERR; stopped: a partition STOP; the SLO has events."""
    groups = demo_groups(status)
    return (
        groups.get(KEEPS_UP) == ("OK", "OK")
        and groups.get(TOO_SLOW, ("", None))[0] in {"WARN", "ERR"}
        and groups.get(STOPS, ("", None))[1] == "STOP"
        and slo_events(status) > 0
    )


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
        what = "OK, lagging and stopped groups and SLO events on /api/status"
        status = poll(lambda: api_status(urls["status page"]), shows_everything, left_s, what, 2.0)
        assert demo_groups(status)[STOPS][0] == "ERR", demo_groups(status)  # Burrow shows a STOP partition as ERR
        # The Burrow v3 API on the same listener agrees: the stopped group has a STOP partition.
        burrow = httpx.get(f"{urls['lag API']}/dev/consumer/{STOPS}/lag", timeout=30, trust_env=False).json()
        assert "STOP" in {p["status"] for p in burrow["status"]["partitions"]}, burrow
        page = httpx.get(urls["status page"], timeout=30, trust_env=False)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]

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
