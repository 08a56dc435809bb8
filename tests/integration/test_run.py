"""`kafka-pulse run` as a real process on the session's 3-node cluster: one
/metrics carrying the collectors', the canary's and lag's families, the Burrow v3 API beside it, both behind
`http.basic_auth` over `http.tls`, and a clean exit 0 on SIGTERM with nothing left running. What every listener
shares (login, formats, bad and idle clients) is tested on `run`'s too, in test_listeners.py.

One process serves the module: the tests read it in order and the last one stops it.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from devstack.services import ServiceTimeout, poll
from devstack.tls import create_pem_files
from kafka_pulse.clusters import dev_cluster_config
from pulse.ports import free_ports, is_listening, wait_until
from pulse.process import pid_alive
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
USER = "prometheus"
PASSWORD = "run-" + "behind-a-login-42"
FAMILIES = {
    "collectors (Admin API)": "kafka_pulse_cluster_state_up{",
    "collectors (JMX)": "kafka_server_replicamanager_leadercount{",
    "canary": "kafka_pulse_canary_records_consumed_total{",
    "lag": "kafka_pulse_lag_source_up{",
}
SLOW_FAMILIES = ("kafka_pulse_broker_slow", "kafka_pulse_broker_slow_score")


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    url: str
    client: httpx.Client
    log_path: Path
    cluster: str

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def children_of(pid: int) -> set[int]:
    """Every process whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


@pytest.fixture(scope="module")
def running(kafka: KafkaHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    home = tmp_path_factory.mktemp("run")
    pem = create_pem_files(home / "tls")
    (port,) = free_ports(1)
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["jmx"]["timeout_s"] = 30  # a first JMX connect on a busy 2-core machine can take seconds
    config = {
        "clusters": [cluster],
        "collectors": {"scrape_interval_s": 2},
        "canary": {"topic": f"pulse-run-{uuid.uuid4().hex[:8]}", "interval_s": 0.5},
        "lag": {"offset_refresh_s": 2},
        "http": {
            "listen": f"127.0.0.1:{port}",
            "basic_auth": {"username": USER, "password": "${PULSE_TEST_RUN_PASSWORD}"},
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
        },
    }
    path = home / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    log_path = home / "run.log"
    register_log("kafka-pulse run", log_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(home), "PULSE_TEST_RUN_PASSWORD": PASSWORD}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    client = httpx.Client(verify=ssl.create_default_context(cafile=str(pem.ca_file)), timeout=10)
    try:
        assert wait_until(lambda: proc.poll() is not None or is_listening(port), 120), "run never listened"
        assert proc.poll() is None, log_path.read_text()[-3000:]
        yield Running(proc, f"https://127.0.0.1:{port}", client, log_path, cluster["name"])
    finally:
        client.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_lag_api_serves_the_cluster_with_the_login(running: Running) -> None:
    answer = running.client.get(running.url + "/v3/kafka", auth=(USER, PASSWORD))
    assert answer.status_code == 200
    assert answer.json()["clusters"] == [running.cluster]
    consumers = running.client.get(running.url + f"/v3/kafka/{running.cluster}/consumer", auth=(USER, PASSWORD))
    assert consumers.status_code == 200 and consumers.json()["error"] is False


def test_one_metrics_endpoint_serves_all_three_components(running: Running) -> None:
    def families_present(response: httpx.Response) -> set[str]:
        return {name for name, marker in FAMILIES.items() if marker in response.text}

    poll(
        lambda: running.client.get(running.url + "/metrics", auth=(USER, PASSWORD)),
        lambda r: r.status_code == 200 and families_present(r) == set(FAMILIES),
        120,
        f"all of {sorted(FAMILIES)} on /metrics",
    )
    log = running.log()
    assert f"metrics {running.url}/metrics (basic auth)" in log
    assert f"lag API {running.url}/v3/kafka (basic auth)" in log
    assert PASSWORD not in log
    assert PASSWORD not in Path(f"/proc/{running.proc.pid}/cmdline").read_bytes().decode(errors="replace")


def test_every_component_reports_a_fresh_last_success_on_metrics(running: Running) -> None:
    """Self-health (kafka_pulse/self_health.py) reads each component's own state: on a healthy cluster every one has
    succeeded recently and none is stale."""
    from kafka_pulse.self_health import parse_self_health

    seen: list[str] = []

    def fresh(response: httpx.Response) -> bool:
        components = {c.component: c for c in parse_self_health(response.text)}
        now = time.time()
        seen[:] = [f"{c.component}: {c.last_success_s} at {now}" for c in components.values()]
        return components.keys() == {"collectors", "canary", "lag_reader"} and all(
            c.last_success_s is not None and not c.is_stale(now) for c in components.values()
        )

    try:
        poll(
            lambda: running.client.get(running.url + "/metrics", auth=(USER, PASSWORD)),
            fresh,
            120,
            "a fresh last success for collectors, canary and lag_reader",
        )
    except ServiceTimeout as exc:
        raise AssertionError(seen) from exc


def test_slow_broker_detection_is_on_by_default_with_jmx(kafka: KafkaHandle, running: Running) -> None:
    """The config has JMX endpoints and no `slow_brokers:` section: the detector runs anyway (on by default) and,
    on the healthy cluster, gives every broker a verdict of 0 and a score."""
    brokers = {str(node.node_id) for node in kafka.cluster.spec.nodes}
    seen: dict[str, dict[str, float]] = {}

    def verdicts(response: httpx.Response) -> bool:
        seen.clear()
        for family in text_string_to_metric_families(response.text):
            for s in family.samples:
                if s.name in SLOW_FAMILIES and s.labels.get("cluster") == running.cluster:
                    seen.setdefault(s.name, {})[s.labels["broker"]] = s.value
        return all(set(seen.get(name, {})) == brokers for name in SLOW_FAMILIES)

    try:
        poll(
            lambda: running.client.get(running.url + "/metrics", auth=(USER, PASSWORD)),
            lambda r: r.status_code == 200 and verdicts(r),
            120,
            f"kafka_pulse_broker_slow and _score for brokers {sorted(brokers)}",
        )
    except ServiceTimeout as exc:
        raise AssertionError(seen) from exc
    assert seen["kafka_pulse_broker_slow"] == dict.fromkeys(brokers, 0.0), seen
    assert all(score >= 0 for score in seen["kafka_pulse_broker_slow_score"].values()), seen
    assert "slow-broker detection every 15 s" in running.log()  # the default interval, from no config at all


def test_sigterm_stops_everything_and_exits_0(running: Running) -> None:
    """Last in the module: SIGTERM, exit 0, every child process gone, the listener closed."""
    children = children_of(running.proc.pid)
    running.proc.send_signal(signal.SIGTERM)
    assert running.proc.wait(timeout=60) == 0, running.log()[-3000:]
    assert not [pid for pid in children if pid_alive(pid)]
    port = int(running.url.rsplit(":", 1)[1])
    assert not is_listening(port)
    log = running.log()
    assert "kafka-pulse run: stopped" in log
    assert "Traceback" not in log
