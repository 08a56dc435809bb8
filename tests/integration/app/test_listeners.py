"""Every command that listens (`collect`, `canary`, `lag`, `run` with lag on and off) serves the same HTTP stack:
the same /metrics formats (client_python's content negotiation and gzip), the same login, the same health
endpoints, the same answers to hostile requests (malformed, dripped past the deadline, past the connection cap),
and neither an idle TLS client nor a silent one stalls a scrape.
Each command runs as a real process on the session's cluster, behind `http.basic_auth` over `http.tls`; the next
divergence between listeners fails here.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import select
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.exposition import choose_encoder

from devstack.tls import create_pem_files
from kafka_pulse.clusters import dev_cluster_config
from pulse.http import MAX_CONNECTIONS
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.pulse_process import PulseProcesses

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
USER = "prometheus"
PASSWORD = "listen-" + "only-with-the-login-3"
OFF = {"enabled": False}
OM_ACCEPT = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_FORMAT, OPENMETRICS = choose_encoder("")[1], choose_encoder(OM_ACCEPT)[1]
"""What client_python's own server answers with: the reference every listener must match."""
FAMILIES = {
    "collect": ("kafka_server_replicamanager_leadercount{", "kafka_pulse_cluster_state_up"),  # JMX over jpype
    "canary": ("kafka_pulse_canary_records_consumed_total{",),
    "lag": ("kafka_pulse_lag_source_up{",),
    "run": ("kafka_pulse_lag_source_up{",),
    "run-lag-off": ("kafka_pulse_canary_records_consumed_total{",),
}
"""Families each command's own component exports, awaited on its /metrics."""
DEADLINE_S = 10.0
"""`http.request_timeout_s` of every listener here (30 s by default): still above the 5 s an idle TLS client may
hold a scrape up, so a handshake back in accept() fails that test, and it keeps each drip test to ~10 s."""


def settings(command: str, topic: str) -> dict[str, Any]:
    """The sections each command runs with: light on a 2-core machine, but each its real listener."""
    sections: dict[str, dict[str, Any]] = {
        "collect": {"collectors": {"transport": "jpype", "scrape_interval_s": 2}},
        "canary": {"canary": {"topic": topic, "interval_s": 0.5}},
        "lag": {"lag": {"offset_refresh_s": 2}},
        "run": {"collectors": OFF, "canary": OFF, "lag": {"offset_refresh_s": 2}},
        "run-lag-off": {"collectors": OFF, "canary": {"topic": topic, "interval_s": 1}, "lag": OFF},
    }
    return sections[command]


@dataclass
class Listener:
    command: str
    cluster: str
    proc: subprocess.Popen[bytes]
    port: int
    url: str
    ca_file: Path
    log_path: Path

    @property
    def serves_burrow(self) -> bool:
        return self.command in ("lag", "run")

    def client(self, **extra: Any) -> httpx.Client:
        return httpx.Client(verify=self.context(), timeout=10, trust_env=False, **extra)

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module", params=["collect", "canary", "lag", "run", "run-lag-off"])
def listener(
    request: pytest.FixtureRequest,
    kafka: KafkaHandle,
    pulse_process: PulseProcesses,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Listener]:
    command: str = request.param
    home = tmp_path_factory.mktemp(f"listener-{command}")
    pem = create_pem_files(home / "tls")
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["jmx"]["timeout_s"] = 30  # a first JMX connect on a busy 2-core machine can take seconds
    config = {
        "clusters": [cluster],
        **settings(command, f"pulse-listen-{uuid.uuid4().hex[:8]}"),
        "http": {
            "basic_auth": {"username": USER, "password": "${PULSE_TEST_HTTP_PASSWORD}"},
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
            "request_timeout_s": DEADLINE_S,
        },
    }
    env = {"PULSE_TEST_HTTP_PASSWORD": PASSWORD}
    run = pulse_process.start(
        command.removesuffix("-lag-off"),
        config,
        home=home,
        env=env,
        auth=(USER, PASSWORD),
        ca_file=pem.ca_file,
        name=f"kafka-pulse {command}",
    )
    handle = Listener(command, cluster["name"], run.popen, run.port, run.url, pem.ca_file, run.log_path)
    try:
        yield handle
    finally:
        returncode = run.stop()
    output = handle.log()
    assert returncode == 0, output[-3000:]
    assert "Traceback" not in output and PASSWORD not in output


def scrape(listener: Listener, **headers: str) -> httpx.Response:
    with listener.client(auth=(USER, PASSWORD)) as http:
        return http.get(f"{listener.url}/metrics", headers=headers)


def test_metrics_formats_are_client_pythons_on_every_listener(listener: Listener) -> None:
    """Same negotiation everywhere: `run` with lag on used to answer plain text uncompressed from the lag API."""
    text = scrape(listener, **{"Accept-Encoding": "identity"})  # httpx asks for gzip unless told
    assert (text.status_code, text.headers["content-type"]) == (200, TEXT_FORMAT)
    assert "content-encoding" not in text.headers and "# HELP " in text.text
    om = scrape(listener, Accept=OM_ACCEPT)
    assert om.headers["content-type"] == OPENMETRICS and om.text.endswith("# EOF\n")
    with (
        listener.client(auth=(USER, PASSWORD)) as http,
        http.stream("GET", f"{listener.url}/metrics", headers={"Accept-Encoding": "gzip"}) as zipped,
    ):
        assert zipped.headers["content-encoding"] == "gzip"
        assert zipped.headers["content-type"] == TEXT_FORMAT
        assert b"# HELP " in gzip.decompress(b"".join(zipped.iter_raw()))


def basic(user: str, password: str, scheme: str = "Basic") -> str:
    return f"{scheme} " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_every_route_needs_the_login_and_any_case_of_basic_works(listener: Listener) -> None:
    paths = [("GET", "/metrics"), ("GET", "/-/ready"), ("GET", "/-/healthy")]
    if listener.serves_burrow:
        paths += [("GET", "/v3/kafka"), ("DELETE", f"/v3/kafka/{listener.cluster}/consumer/g")]
    with listener.client() as http:
        for method, path in paths:
            refused = http.request(method, listener.url + path)
            assert refused.status_code == 401, (method, path)
            assert refused.headers["www-authenticate"].startswith('Basic realm="kafka-pulse"')
            wrong = http.request(method, listener.url + path, headers={"Authorization": basic(USER, PASSWORD + "x")})
            assert wrong.status_code == 401, (method, path)
        for scheme in ("Basic", "basic", "BASIC"):
            answer = http.get(f"{listener.url}/metrics", headers={"Authorization": basic(USER, PASSWORD, scheme)})
            assert answer.status_code == 200, scheme
    with pytest.raises(httpx.HTTPError):  # and plain HTTP gets nothing at all
        httpx.get(f"http://127.0.0.1:{listener.port}/metrics", auth=(USER, PASSWORD), timeout=10)
    assert PASSWORD not in Path(f"/proc/{listener.proc.pid}/cmdline").read_bytes().decode(errors="replace")


def test_health_endpoints_and_unknown_paths(listener: Listener) -> None:
    with listener.client(auth=(USER, PASSWORD)) as http:
        assert http.get(f"{listener.url}/-/healthy").text == "OK\n"
        assert http.get(f"{listener.url}/-/ready").text == "READY\n"
        unknown = http.get(f"{listener.url}/nowhere")
        assert unknown.status_code == 404
        if listener.serves_burrow:  # Burrow's answer, as tools written for Burrow expect
            assert unknown.json() == {"error": True, "message": "invalid request type", "result": {}}
            assert http.get(f"{listener.url}/burrow/admin").text == "GOOD"
            assert http.get(f"{listener.url}/v3/kafka").json()["clusters"] == [listener.cluster]


def test_an_idle_tls_client_and_a_silent_one_do_not_stall_a_scrape(listener: Listener) -> None:
    """One TCP connection that never starts its TLS handshake, one that completes it and never sends a request:
    with the handshake in accept() (prometheus_client's server), the first held every scrape for its timeout."""
    idle = socket.create_connection(("127.0.0.1", listener.port), timeout=30)
    silent = listener.context().wrap_socket(
        socket.create_connection(("127.0.0.1", listener.port), timeout=30), server_hostname="localhost"
    )
    try:
        started = time.monotonic()
        assert scrape(listener).status_code == 200
        assert time.monotonic() - started < 5.0
    finally:
        idle.close()
        silent.close()


def tls_exchange(listener: Listener, data: bytes) -> bytes:
    """`data` sent over a TLS connection of its own; all that comes back until the server closes."""
    with listener.context().wrap_socket(
        socket.create_connection(("127.0.0.1", listener.port), timeout=60), server_hostname="localhost"
    ) as client:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
            client.sendall(data)
        return read_all(client)


def read_all(client: socket.socket) -> bytes:
    chunks: list[bytes] = []
    with contextlib.suppress(ConnectionResetError, ssl.SSLEOFError):  # an answer, then the reset of unread bytes
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@pytest.mark.parametrize(
    ("request_bytes", "status", "says"),
    [
        pytest.param(b"GET /metrics HTTP/x.y\r\n\r\n", 400, "Bad request version", id="bad-version"),
        pytest.param(b"GET /metrics\r\n\r\n", 400, "names no HTTP version", id="http09"),
        pytest.param(b"\r\n", 400, "empty request line", id="empty-line"),
        pytest.param(head("GET /metrics HTTP/1.1", "Content-Length: abc"), 400, "not a byte count", id="length-abc"),
        pytest.param(head("POST /x HTTP/1.1", "Content-Length: \xb2"), 400, "not a byte count", id="length-digit"),
        pytest.param(head("POST /x HTTP/1.1", "Content-Length: -1"), 400, "not a byte count", id="length-negative"),
        pytest.param(head("GET /metrics HTTP/1.1", "no colon"), 400, "malformed header line", id="header-no-colon"),
        pytest.param(head("GET /metrics HTTP/1.1", "X: a", " folded"), 400, "folded line", id="header-folded"),
        pytest.param(head("GET /metrics HTTP/1.1", "X: " + "a" * 70_000), 431, "Line too long", id="header-long"),
        pytest.param(head("POST /x HTTP/1.1", "Transfer-Encoding: chunked"), 501, "Content-Length", id="chunked"),
        pytest.param(head("PROPFIND /metrics HTTP/1.1"), 501, "Unsupported method", id="method-unknown"),
    ],
)
def test_a_hostile_request_gets_a_plain_answer(
    listener: Listener, request_bytes: bytes, status: int, says: str
) -> None:
    """Answered before the login is checked, in plain text, with no traceback in the log (checked at teardown);
    `Content-Length: abc` once got no answer and a traceback."""
    answer = tls_exchange(listener, request_bytes)
    assert answer.startswith(f"HTTP/1.0 {status} ".encode()), answer[:200]
    assert b"\r\nServer: kafka-pulse\r\n" in answer  # no Python version
    assert b"Content-Type: text/plain; charset=utf-8" in answer and says.encode() in answer


def test_a_request_dripped_past_the_deadline_gets_408(listener: Listener) -> None:
    """A byte every second: a socket timeout restarted with each byte and kept the thread for ever; the deadline
    for the whole request (`http.request_timeout_s`) answers 408 and closes while the client is still dripping."""
    with listener.context().wrap_socket(
        socket.create_connection(("127.0.0.1", listener.port), timeout=60), server_hostname="localhost"
    ) as client:
        client.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        answer = b""
        for _ in range(int(4 * DEADLINE_S)):  # up to four deadlines of dripping
            readable, _, _ = select.select([client], [], [], 1.0)
            if readable or client.pending():
                answer = read_all(client)
                break
            try:
                client.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
                answer = read_all(client)
                break
    assert answer.startswith(b"HTTP/1.0 408 "), answer[:200]
    assert f"the request was not complete within {DEADLINE_S:g} s".encode() in answer


def test_past_the_connection_cap_a_client_gets_503_and_service_resumes(listener: Listener) -> None:
    """64 connections that never start their TLS handshake hold every slot: the next client is answered 503 (it
    was closed without a word), and scrapes are served again once they go."""
    idle = [socket.create_connection(("127.0.0.1", listener.port), timeout=30) for _ in range(MAX_CONNECTIONS)]
    try:
        busy = scrape(listener)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert busy.text.startswith(f"503 Service Unavailable: {MAX_CONNECTIONS} connections are open")
    finally:
        for client in idle:
            client.close()
    poll(lambda: _scrapes(listener), bool, 30, "a scrape answered after the idle clients left")
    assert "connections open, answering new ones 503" in listener.log()


def _scrapes(listener: Listener) -> bool:
    try:
        return scrape(listener).status_code == 200
    except httpx.HTTPError:
        return False


def test_writes_with_the_login_reach_the_routes(listener: Listener) -> None:
    """The login is what allows a write: with it, Burrow's DELETE answers as Burrow does; elsewhere a POST reaches
    the router (405), not the refusal of unauthenticated writes."""
    with listener.client(auth=(USER, PASSWORD)) as http:
        if listener.serves_burrow:
            deleted = http.delete(f"{listener.url}/v3/kafka/{listener.cluster}/consumer/no-such-group")
            assert (deleted.status_code, deleted.json()["message"]) == (200, "consumer group removed")
            level = http.post(f"{listener.url}/v3/admin/loglevel", json={"level": "info"})
            assert level.json()["message"] == "set log level"
        else:
            assert http.post(f"{listener.url}/metrics", json={}).status_code == 405


def test_each_listener_serves_its_components_families(listener: Listener) -> None:
    poll(
        lambda: scrape(listener),
        lambda r: r.status_code == 200 and all(family in r.text for family in FAMILIES[listener.command]),
        90,
        f"{FAMILIES[listener.command]} on the /metrics of {listener.command}",
    )
    assert f"{listener.url}/metrics (basic auth)" in listener.log()
