"""Planted secrets against real processes: `kafka-pulse run` on a SASL_SSL Kafka (the SCRAM password), behind
`http.basic_auth` (its password), alerting to a URL with `user:password@` and a bearer token; every surface it shows
(its stderr: banner and logs, /metrics, every Burrow config route, the status page) is read and none may hold a
secret. And the Prometheus SLI source's client, through the one outbound factory, ignores proxy variables: it used
to follow them (so a stray HTTPS_PROXY on a host sent SLI queries, and their login, elsewhere).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from devstack.prometheus import Prometheus
from kafka_pulse.clusters import dev_cluster_config
from pulse.ports import free_ports, wait_until
from slo.model import PrometheusSource
from slo.sources import fetch_minutes
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
USER = "prometheus"
HTTP_PASSWORD = "PLANTED-http-" + "pw-7"
URL_PASSWORD = "PLANTED-url-" + "pw-8"
TOKEN = "PLANTED-token-" + "9"
KEY_PASSWORD = "PLANTED-key-" + "pw-6"
OFF = {"enabled": False}
LOGIN = (USER, HTTP_PASSWORD)


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


def client_key(directory: Path) -> dict[str, str]:
    """A client certificate and its private key encrypted with KEY_PASSWORD (the brokers ask for no client
    certificate, but every client still loads the key, so a wrong password fails the client)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-pulse-test-client")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1)).sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_file, key_file = directory / "client.pem", directory / "client-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption = serialization.BestAvailableEncryption(KEY_PASSWORD.encode())
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return {"cert_file": str(cert_file), "key_file": str(key_file), "key_password": "${PULSE_TEST_KEY_PW}"}


def planted(
    kafka_sasl: KafkaHandle, home: Path, port: int, alert_port: int, **sections: object
) -> tuple[Path, dict[str, str], str]:
    """A config file under `home` naming every planted secret only by `${VAR}` (so no file holds one), the
    environment that gives them, and the SASL password; `sections` replace the defaults (collectors and canary off,
    lag notifying a login-protected Alertmanager URL)."""
    model = dev_cluster_config(kafka_sasl.cluster)
    assert model.security.sasl is not None
    sasl_password = model.security.sasl.password.get_secret_value()
    cluster = model.model_dump(mode="json")  # the password dumps masked; the env var below gives the real one
    cluster["security"]["sasl"]["password"] = "${PULSE_TEST_SASL_PASSWORD}"
    cluster["security"]["tls"] |= client_key(home)
    config = {
        "clusters": [cluster],
        "collectors": OFF,
        "canary": OFF,
        "lag": {"offset_refresh_s": 2, "notify": {"enabled": True}},
        "alerting": {
            "enabled": True,
            "alertmanager_url": f"http://am-user:${{PULSE_TEST_URL_PW}}@127.0.0.1:{alert_port}",
            "bearer_token": "${PULSE_TEST_TOKEN}",
        },
        "http": {"listen": f"127.0.0.1:{port}", "basic_auth": {"username": USER, "password": "${PULSE_TEST_PW}"}},
    } | sections
    path = home / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KAFKA_PULSE_HOME": str(home),
        "PULSE_TEST_SASL_PASSWORD": sasl_password,
        "PULSE_TEST_TOKEN": TOKEN,
        "PULSE_TEST_PW": HTTP_PASSWORD,
        "PULSE_TEST_URL_PW": URL_PASSWORD,
        "PULSE_TEST_KEY_PW": KEY_PASSWORD,
    }
    return path, env, sasl_password


def await_ready(proc: subprocess.Popen[bytes], url: str, output: Callable[[], str]) -> None:
    with httpx.Client(auth=LOGIN, timeout=10, trust_env=False) as http:

        def ready() -> bool:
            assert proc.poll() is None, output()[-3000:]
            try:
                return http.get(f"{url}/-/ready").status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_until(ready, 120, interval_s=0.2), output()[-3000:]


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def run(kafka_sasl: KafkaHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    home = tmp_path_factory.mktemp("secrets-run")
    (port, alert_port) = free_ports(2)
    path, env, sasl_password = planted(kafka_sasl, home, port, alert_port)
    log_path = home / "run.log"
    register_log("kafka-pulse run (planted secrets)", log_path)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    handle = Run(proc, f"http://127.0.0.1:{port}", dev_cluster_config(kafka_sasl.cluster).name, log_path,
                 sasl_password, alert_port)  # fmt: skip
    try:
        await_ready(proc, handle.url, handle.log)
        yield handle
    finally:
        stop(proc)


def secrets_in(text: str, run: Run) -> list[str]:
    return [s for s in (HTTP_PASSWORD, URL_PASSWORD, TOKEN, KEY_PASSWORD, run.sasl_password) if s in text]


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


# --- every long-running command at DEBUG ---------------------------------------------------------------------

DEBUG_LAUNCHER = (
    "import logging, sys; from pulse.lifecycle import configure_logging; configure_logging(logging.DEBUG); "
    "from kafka_pulse.cli.main import cli; cli(sys.argv[1:], prog_name='kafka-pulse')"
)
"""collect and canary have no log level setting and no loglevel route: their root logger starts at DEBUG (the
command's own configure_logging then keeps the level and adds the pins)."""
CLUSTER_STATE_UP = r"^kafka_pulse_cluster_state_up\{[^}]*\} 1\.0$"
JMX_UP = r"^kafka_pulse_jmx_up\{[^}]*\} 1\.0$"
CANARY_ROUND_TRIP = r"^kafka_pulse_canary_e2e_latency_seconds_count\{[^}]*\} [1-9]"
LAG_UP = r"^kafka_pulse_lag_source_up\{[^}]*\} 1\.0$"
OURS_AT_DEBUG = re.compile(r"^\S+ \S+ DEBUG (?:pulse|kafka_pulse|lag|canary|collectors)\b[\w.]*: ", re.M)
THIRD_PARTY_BELOW_WARNING = re.compile(
    r"^\S+ \S+ (?:DEBUG|INFO) (?:kafka|confluent_kafka|py4j|pyspark|jpype|urllib3|requests|httpx|httpcore|h11|h2|hpack)"
    r"[.:]",
    re.M,
)
COLLECTING: dict[str, object] = {"collectors": {"scrape_interval_s": 2}}
PROBING: dict[str, object] = {"canary": {"enabled": True, "interval_s": 0.5}}


@dataclass(frozen=True)
class Command:
    name: str
    sections: dict[str, object]
    working: tuple[str, ...]
    """/metrics lines (regexes) that show its Kafka and JMX clients were built and used at DEBUG."""
    by_route: bool
    """DEBUG through POST /v3/admin/loglevel (lag and run serve it), else from the start (DEBUG_LAUNCHER)."""


COMMANDS = [
    pytest.param(Command("collect", COLLECTING, (CLUSTER_STATE_UP, JMX_UP), by_route=False), id="collect"),
    pytest.param(Command("canary", PROBING, (CANARY_ROUND_TRIP,), by_route=False), id="canary"),
    pytest.param(Command("lag", {}, (LAG_UP,), by_route=True), id="lag"),
    pytest.param(Command("run", COLLECTING | PROBING, (LAG_UP, CLUSTER_STATE_UP, JMX_UP, CANARY_ROUND_TRIP),
                         by_route=True), id="run"),
]  # fmt: skip


def await_two_refreshes(http: httpx.Client, url: str, since: datetime) -> None:
    """The status board's check (kafka-python's admin client for the quorum) ran wholly after `since`: the second
    `checked_at` past it."""

    def checked_at() -> datetime | None:
        value = http.get(f"{url}/api/status").json()["checked_at"]
        return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))

    seen: list[datetime] = []

    def refreshed_twice() -> bool:
        at = checked_at()
        if at is not None and at > since and at not in seen:
            seen.append(at)
        return len(seen) >= 2

    assert wait_until(refreshed_twice, 60, interval_s=0.5), seen


@pytest.mark.parametrize("command", COMMANDS)
def test_no_long_running_command_logs_a_planted_secret_at_debug(
    command: Command, kafka_sasl: KafkaHandle, tmp_path: Path
) -> None:
    # Planted: the SCRAM password, the client key's password, the listener's password, the Alertmanager URL's
    # password and bearer token. kafka-python logs its whole config at DEBUG when an admin client starts.
    (port, alert_port) = free_ports(2)
    path, env, sasl_password = planted(kafka_sasl, tmp_path, port, alert_port, **command.sections)
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    register_log(f"kafka-pulse {command.name} at DEBUG (stderr)", stderr)
    launch = (
        [sys.executable, "-c", DEBUG_LAUNCHER]
        if not command.by_route
        else [sys.executable, "-m", "kafka_pulse.cli.main"]
    )
    url = f"http://127.0.0.1:{port}"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(
            [*launch, command.name, "--config", str(path)], cwd=REPO, stdout=out, stderr=err, env=env
        )
    bodies: list[str] = []
    try:
        await_ready(proc, url, lambda: stderr.read_text(errors="replace"))
        with httpx.Client(auth=LOGIN, timeout=10, trust_env=False) as http:
            if command.by_route:
                since = datetime.now(UTC)
                answer = http.post(f"{url}/v3/admin/loglevel", json={"level": "debug"})
                assert answer.json()["message"] == "set log level", answer.text
                await_two_refreshes(http, url, since)
                bodies.append(http.get(f"{url}/api/status").text)

            def working() -> bool:
                bodies.append(http.get(f"{url}/metrics").text)
                return all(re.search(pattern, bodies[-1], re.M) for pattern in command.working)

            assert wait_until(working, 120, interval_s=1), bodies[-1][-3000:]
    finally:
        stop(proc)
    outputs = {"stdout": stdout.read_text(errors="replace"), "stderr": stderr.read_text(errors="replace")}
    outputs |= {str(f.relative_to(tmp_path)): f.read_bytes().decode(errors="replace") for f in tmp_path.rglob("*")
                if f.is_file() and f not in (stdout, stderr)}  # fmt: skip
    outputs |= {f"http body {i}": body for i, body in enumerate(bodies)}
    assert OURS_AT_DEBUG.search(outputs["stderr"]), outputs["stderr"][-3000:]  # DEBUG really took effect
    secrets = (sasl_password, KEY_PASSWORD, HTTP_PASSWORD, URL_PASSWORD, TOKEN)
    leaks = {name: [line for line in text.splitlines() if any(s in line for s in secrets)][:5]
             for name, text in outputs.items() if any(s in text for s in secrets)}  # fmt: skip
    assert leaks == {}
    assert THIRD_PARTY_BELOW_WARNING.findall(outputs["stderr"]) == []


def test_the_prometheus_source_ignores_proxy_variables(prometheus: Prometheus, monkeypatch: pytest.MonkeyPatch) -> None:
    (dead,) = free_ports(1)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{dead}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    hi = datetime.now(UTC).replace(second=0, microsecond=0)
    values = fetch_minutes(PrometheusSource(prometheus.url, 10.0), "vector(1)", hi - timedelta(minutes=5), hi, "g")
    assert values and set(values.values()) == {1.0}
