"""`kafka-pulse collect` behind `http.basic_auth` over `http.tls`, as a real process on the real cluster (issue #3)."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from devstack.services import poll
from devstack.tls import create_pem_files
from kafka_pulse.clusters import dev_cluster_config
from pulse.ports import free_ports, is_listening, wait_until
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "scrape-" + "me-if-you-can-7"


def test_collect_needs_the_login_and_serves_only_https(kafka: KafkaHandle, tmp_path: Path) -> None:
    pem = create_pem_files(tmp_path / "tls")
    (port,) = free_ports(1)
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["security"] = {"protocol": "PLAINTEXT"}
    cluster["jmx"]["timeout_s"] = 30  # a first connect on a busy 2-core machine can take seconds
    config = {
        "clusters": [cluster],
        "collectors": {"transport": "jpype", "scrape_interval_s": 2},
        "http": {
            "listen": f"127.0.0.1:{port}",
            "basic_auth": {"username": "prometheus", "password": "${PULSE_TEST_HTTP_PASSWORD}"},
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
        },
    }
    path = tmp_path / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    log_path = tmp_path / "collect.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PULSE_TEST_HTTP_PASSWORD": PASSWORD}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "collect", "--config", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:
        assert wait_until(lambda: proc.poll() is not None or is_listening(port), 60), "collect never listened"
        assert proc.poll() is None, log_path.read_text()[-3000:]
        url = f"https://127.0.0.1:{port}/metrics"
        trusted = ssl.create_default_context(cafile=str(pem.ca_file))
        with httpx.Client(verify=trusted, timeout=10) as client:
            refused = client.get(url)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Basic ")
            assert client.get(url, auth=("prometheus", PASSWORD + "x")).status_code == 401
            assert client.get(url, auth=("grafana", PASSWORD)).status_code == 401
            body = poll(
                lambda: client.get(url, auth=("prometheus", PASSWORD)),
                lambda r: r.status_code == 200 and "kafka_server_replicamanager_leadercount{" in r.text,
                90,
                "a JMX scrape on /metrics",
            ).text
            assert "kafka_pulse_jmx_up{" in body
            assert "kafka_pulse_cluster_state_up" in body
        with pytest.raises(httpx.HTTPError):  # plain HTTP to the TLS listener gets no answer
            httpx.get(f"http://127.0.0.1:{port}/metrics", auth=("prometheus", PASSWORD), timeout=10)
        assert PASSWORD not in Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    output = log_path.read_text()
    assert proc.returncode == 0, output[-3000:]
    assert f"metrics on https://127.0.0.1:{port}/metrics (basic auth)" in output
    assert PASSWORD not in output
