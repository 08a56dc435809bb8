"""Planted secrets against real processes: `kafka-pulse run` on a SASL_SSL Kafka (the SCRAM password), behind
`http.basic_auth` (its password), alerting to a URL with `user:password@` and a bearer token; every surface it shows
(its stderr: banner and logs, /metrics, every Burrow config route, the status page) is read and none may hold a
secret. And the Prometheus SLI source's client, through the one outbound factory, ignores proxy variables: it used
to follow them (so a stray HTTPS_PROXY on a host sent SLI queries, and their login, elsewhere).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from devstack.prometheus import Prometheus
from kafka_pulse.clusters import dev_cluster_config
from pulse.ports import free_ports, wait_until
from slo.model import PrometheusSource
from slo.sources import fetch_minutes
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.logs import register_log

REPO = Path(__file__).resolve().parents[3]
USER = "prometheus"
HTTP_PASSWORD = "PLANTED-http-" + "pw-7"
URL_PASSWORD = "PLANTED-url-" + "pw-8"
TOKEN = "PLANTED-token-" + "9"
OFF = {"enabled": False}


@dataclass
class Run:
    proc: subprocess.Popen[bytes]
    url: str
    cluster: str
    log_path: Path
    sasl_password: str
    alert_port: int

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def run(kafka_sasl: KafkaHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    home = tmp_path_factory.mktemp("secrets-run")
    (port, alert_port) = free_ports(2)
    model = dev_cluster_config(kafka_sasl.cluster)
    assert model.security.sasl is not None
    sasl_password = model.security.sasl.password.get_secret_value()
    cluster = model.model_dump(mode="json")  # the password dumps masked; the env var below gives the real one
    cluster["security"]["sasl"]["password"] = "${PULSE_TEST_SASL_PASSWORD}"
    config = {
        "clusters": [cluster],
        "collectors": OFF,
        "canary": OFF,
        "lag": {"offset_refresh_s": 2, "notify": {"enabled": True}},
        "alerting": {
            "enabled": True,
            "alertmanager_url": f"http://am-user:{URL_PASSWORD}@127.0.0.1:{alert_port}",
            "bearer_token": "${PULSE_TEST_TOKEN}",
        },
        "http": {"listen": f"127.0.0.1:{port}", "basic_auth": {"username": USER, "password": "${PULSE_TEST_PW}"}},
    }
    path = home / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    log_path = home / "run.log"
    register_log("kafka-pulse run (planted secrets)", log_path)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KAFKA_PULSE_HOME": str(home),
        "PULSE_TEST_SASL_PASSWORD": sasl_password,
        "PULSE_TEST_TOKEN": TOKEN,
        "PULSE_TEST_PW": HTTP_PASSWORD,
    }
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    handle = Run(proc, f"http://127.0.0.1:{port}", cluster["name"], log_path, sasl_password, alert_port)
    try:
        with httpx.Client(auth=(USER, HTTP_PASSWORD), timeout=10, trust_env=False) as http:

            def ready() -> bool:
                assert proc.poll() is None, handle.log()[-3000:]
                try:
                    return http.get(f"{handle.url}/-/ready").status_code == 200
                except httpx.HTTPError:
                    return False

            assert wait_until(ready, 120, interval_s=0.2), handle.log()[-3000:]
        yield handle
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def secrets_in(text: str, run: Run) -> list[str]:
    return [s for s in (HTTP_PASSWORD, URL_PASSWORD, TOKEN, run.sasl_password) if s in text]


def test_no_surface_of_run_shows_a_planted_secret(run: Run) -> None:
    routes = [
        "/metrics",
        "/v3/kafka",
        f"/v3/kafka/{run.cluster}",
        "/v3/config",
        "/v3/config/notifier",
        "/v3/config/notifier/alertmanager",
        f"/v3/config/cluster/{run.cluster}",
        f"/v3/config/consumer/{run.cluster}",
        "/v3/config/storage/default",
        "/v3/config/evaluator/default",
        "/",
    ]
    with httpx.Client(auth=(USER, HTTP_PASSWORD), timeout=10, trust_env=False) as http:
        bodies = {route: http.get(f"{run.url}{route}") for route in routes}
    # The SCRAM login worked: lag reads the cluster (so the password was used, and still never shown).
    with httpx.Client(auth=(USER, HTTP_PASSWORD), timeout=10, trust_env=False) as http:
        up = f'kafka_pulse_lag_source_up{{cluster="{run.cluster}"}} 1.0'
        assert wait_until(lambda: up in http.get(f"{run.url}/metrics").text, 90), run.log()[-3000:]
    notifier = bodies["/v3/config/notifier/alertmanager"].json()["module"]
    assert notifier["url"] == f"http://***@127.0.0.1:{run.alert_port}", notifier
    for route, answer in bodies.items():
        assert answer.status_code == 200 or route == "/", (route, answer.status_code)
        assert secrets_in(answer.text, run) == [], route
    # Its stderr: the banner names the Alertmanager without its login; any log line of the run so far.
    assert wait_until(lambda: "alerting: " in run.log(), 30), run.log()[-3000:]
    assert f"alerting: http://***@127.0.0.1:{run.alert_port}" in run.log()
    assert secrets_in(run.log(), run) == [], run.log()[-3000:]


def test_the_prometheus_source_ignores_proxy_variables(prometheus: Prometheus, monkeypatch: pytest.MonkeyPatch) -> None:
    (dead,) = free_ports(1)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{dead}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    hi = datetime.now(UTC).replace(second=0, microsecond=0)
    values = fetch_minutes(PrometheusSource(prometheus.url, 10.0), "vector(1)", hi - timedelta(minutes=5), hi, "g")
    assert values and set(values.values()) == {1.0}
