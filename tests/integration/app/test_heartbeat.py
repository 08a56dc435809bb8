"""Who watches the watcher, end to end: `kafka-pulse run` (a real process) keeps KafkaPulseHeartbeat firing through
a real Alertmanager running examples/alertmanager.yml, whose dead-man route repeats it to the receiver; `check`
reads the run's self-health and names its stale lag reader (its cluster does not exist); after `kill -9` the
heartbeat resolves at its endsAt and the dead-man receiver sees no more repeats.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from devstack.alertmanager import Alertmanager, AlertRouting
from devstack.services import ServiceTimeout
from kafka_pulse.cli.main import cli
from kafka_pulse.runner.heartbeat import HEARTBEAT_ALERTNAME
from pulse.polling import poll
from pulse.ports import free_ports, wait_until
from tests.fixtures.logs import register_log
from tests.fixtures.pulse_process import PulseProcesses
from tests.fixtures.services import example_alertmanager_service
from tests.support.receiver import HttpReceiver, ReceivedRequest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DEADMAN_PATH = "/deadman"
REPEAT_S = 2.0
"""The dead-man route's repeat interval here (1m in examples/alertmanager.yml)."""


@pytest.fixture
def deadman_alertmanager(tmp_path: Path, http_receiver: HttpReceiver) -> Iterator[Alertmanager]:
    """examples/alertmanager.yml as written, its webhooks (the dead-man's switch among them) pointed at the receiver
    and its repeats every 2 s, so repeats are visible in seconds."""
    routing = AlertRouting(group_wait_s=0.5, group_interval_s=1.0, repeat_interval_s=REPEAT_S)
    service = example_alertmanager_service(tmp_path / "alertmanager", http_receiver, DEADMAN_PATH, routing)
    register_log("deadman-alertmanager", service.log_path)
    try:
        yield service.start()
    finally:
        service.stop()


def is_heartbeat(request: ReceivedRequest) -> bool:
    body = request.json
    return (
        request.path == DEADMAN_PATH
        and isinstance(body, dict)
        and body.get("commonLabels", {}).get("alertname") == HEARTBEAT_ALERTNAME
        and body.get("receiver") == "kafka-pulse-deadman"
    )


def test_kill_9_stops_the_heartbeat_reaching_the_dead_man_receiver(
    deadman_alertmanager: Alertmanager, http_receiver: HttpReceiver, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    (dead_kafka,) = free_ports(1)
    config = {
        "clusters": [{"name": "gone", "bootstrap_servers": [f"127.0.0.1:{dead_kafka}"]}],
        "collectors": {"enabled": False},
        "canary": {"enabled": False},
        "lag": {"offset_refresh_s": 1},
        "alerting": {"enabled": True, "alertmanager_url": deadman_alertmanager.url, "resend_interval_s": 1,
                     "keepalive_cycles": 2, "labels": {"team": "kafka"}},
    }  # fmt: skip
    mark = http_receiver.mark()
    env = {"KAFKA_PULSE_HOME": str(tmp_path / "home")}
    run = pulse_process.start("run", config, home=tmp_path, env=env)
    try:
        # Alive: the heartbeat reaches the dead-man receiver, and again at the route's repeat interval.
        first = http_receiver.wait_for(is_heartbeat, timeout_s=60, after=mark)
        assert first.json["commonLabels"]["team"] == "kafka" and first.json["status"] == "firing"
        index = http_receiver.requests.index(first)
        http_receiver.wait_for(is_heartbeat, timeout_s=30, after=index + 1)

        # check reads the run's self-health: its lag reader has no cluster to read, so it is stale.
        poll(
            lambda: stale_components(run.config_path), lambda stale: stale == ["lag_reader"], 60, "lag_reader stale", 1
        )
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.popen.wait()

    # Dead: Alertmanager resolves the heartbeat at its endsAt (2 s after the last post) and stops repeating it.
    def heartbeat_active() -> bool:
        alerts = deadman_alertmanager.alerts(active_only=True)
        return any(a["labels"].get("alertname") == HEARTBEAT_ALERTNAME for a in alerts)

    assert wait_until(lambda: not heartbeat_active(), 30, interval_s=0.5)
    quiet_from = http_receiver.mark()
    with pytest.raises(ServiceTimeout):  # three repeat intervals and more: nothing reaches the dead-man receiver
        http_receiver.wait_for(is_heartbeat, timeout_s=3 * REPEAT_S + 2, after=quiet_from)


def stale_components(config: Path) -> list[str]:
    """The stale components `check --json` reports in its `self` section."""
    result = CliRunner().invoke(cli, ["check", "--config", str(config), "--json"])
    report = json.loads(result.stdout)
    (own,) = [c for c in report["checks"] if c["name"] == "self"]
    return sorted(c["component"] for c in own["details"].get("components", []) if c["stale"])
