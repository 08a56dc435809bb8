"""Planted secrets (pulse/redact.py, pulse/http/client.py): a password, a token and a URL's `user:password@` put in a
config must not appear in any output of a command that refuses it, in `check --json`, in a log line or in a message
of the outbound clients; and the login and CA of `alerting`, `slo.pushgateway_client` and a Prometheus source reach
the server through the one client factory, which ignores proxy variables and `.netrc`.

Servers here are real loopback listeners: pulse.http's own HTTPS listener (an echo route) and tests/support's
recording HTTP endpoint.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from devstack.tls import create_pem_files
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import ProbeFailed
from kafka_pulse.check.slo_budgets import read_pushgateway
from kafka_pulse.cli.main import cli
from lag.serve.burrow_json import alertmanager_notifier_json
from pulse.alerts import Alert, AlertSink
from pulse.config import HttpClientConfig, PulseConfig
from pulse.http import HttpApp, HttpServer, Request, Response, Route, Router, ServerTls
from pulse.http.client import outbound_client
from pulse.ports import free_ports
from pulse.redact import redact_text, redact_url
from tests.support.receiver import HttpReceiver

SECRET = "PLANTED-s3cr3t"
TOKEN = "PLANTED-t0ken"
REPO = Path(__file__).resolve().parents[3]

# --- the redaction function -------------------------------------------------------------------------------------

TEXTS = [
    pytest.param(f"alertmanager https://ops:{SECRET}@am.example.com:9093 is down", "https://***@am.example.com:9093",
                 id="userinfo"),
    pytest.param(f"https://ops:{SECRET}@x@am:9093/api", "https://***@am:9093/api", id="raw-at-in-password"),
    pytest.param(f'{{"url": "http://{SECRET}@h:1", "x": "a@b"}}', '{"url": "http://***@h:1", "x": "a@b"}',
                 id="json-stays-json"),
    pytest.param(f"Authorization: Bearer {TOKEN}", "Authorization: Bearer ***", id="bearer-header"),
    pytest.param(f"{{'authorization': 'Basic {SECRET}'}}", "{'authorization': 'Basic ***'}", id="header-dict"),
    pytest.param(f"GET /metrics?token={TOKEN}&x=1", "GET /metrics?token=***&x=1", id="query-token"),
    pytest.param(f"sasl.password={SECRET}", "sasl.password=***", id="key-value"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "shown"), TEXTS)
def test_redact_text_removes_the_secret_and_keeps_the_rest(text: str, shown: str) -> None:
    assert SECRET not in redact_text(text) and TOKEN not in redact_text(text)
    assert shown in redact_text(text)


def test_text_without_secrets_is_unchanged() -> None:
    plain = "http.basic_auth.password: is empty; see http://127.0.0.1:9093/api/v2/alerts or mail ops@example.com"
    assert redact_text(plain) == plain
    assert redact_url("http://127.0.0.1:9093") == "http://127.0.0.1:9093"
    assert redact_url(f"https://u:{SECRET}@am:9093/x?y=1") == "https://***@am:9093/x?y=1"


# --- config errors: every command that refuses the file, and check --------------------------------------------


@dataclass(frozen=True)
class Planted:
    config: dict[str, object]
    key: str
    """The key path the message must name."""


def source(url: str) -> dict[str, object]:
    return {"name": "p", "source": {"type": "prometheus", "url": url}, "good": "vector(1)", "total": "vector(1)"}


PLANTED = [
    pytest.param(Planted({"alerting": {"enabled": True, "alertmanager_url": f"ftp://ops:{SECRET}@am:9093"}},
                         "alerting.alertmanager_url"), id="alertmanager-url-scheme"),
    pytest.param(Planted({"alerting": {"alertmanager_url": f"http://ops:{SECRET}@am:9093", "timeout_s": 1000}},
                         "alerting.timeout_s"), id="valid-url-other-key"),
    pytest.param(Planted({"slo": {"pushgateway_url": f"gopher://pg:{SECRET}@pg:9091"}}, "slo.pushgateway_url"),
                 id="pushgateway-url"),
    pytest.param(Planted({"slos": [source(f"tcp://prom:{SECRET}@prom:9090")]}, "slos[0].source.url"),
                 id="prometheus-source-url"),
    pytest.param(Planted({"alerting": {"bearer_token": [TOKEN]}}, "alerting.bearer_token"), id="token-wrong-type"),
    pytest.param(Planted({"alerting": {"basic_auth": {"username": "u", "password": SECRET}, "bearer_token": TOKEN}},
                         "alerting.bearer_token"), id="token-and-login"),
    pytest.param(Planted({"http": {"basic_auth": {"username": "u", "password": [SECRET]}}},
                         "http.basic_auth.password"), id="password-wrong-type"),
    pytest.param(Planted({"clusters": [{"name": "c", "bootstrap_servers": [f"u:{SECRET}@kafka:9092"]}]},
                         "clusters[0].bootstrap_servers[0]"), id="userinfo-in-host-port"),
]  # fmt: skip


@pytest.mark.parametrize("planted", PLANTED)
@pytest.mark.parametrize(("command", "code"), [(["run"], 2), (["check", "--json"], 3), (["slo", "rules"], 2)])
def test_a_refused_config_never_shows_the_planted_secret(
    planted: Planted, command: list[str], code: int, tmp_path: Path
) -> None:
    path = tmp_path / "pulse.yaml"
    path.write_text(yaml.safe_dump(planted.config))
    result = CliRunner().invoke(cli, [*command, "--config", str(path)])
    assert result.exit_code == code, result.output
    assert f"{planted.key}: " in result.output, result.output
    assert SECRET not in result.output and TOKEN not in result.output, result.output
    assert "Traceback" not in result.output


def test_a_log_line_never_shows_a_secret() -> None:
    # A real process: configure_logging as every command calls it, then a component logging a URL it was given.
    program = (
        "import logging; from pulse.lifecycle import configure_logging; configure_logging(); "
        f"logging.getLogger('pulse.alerts').warning('alertmanager %s: refused', 'http://ops:{SECRET}@127.0.0.1:1'); "
        f"logging.getLogger('x').error('failed', exc_info=ValueError('Authorization: Bearer {TOKEN}'))"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert "alertmanager http://***@127.0.0.1:1: refused" in done.stderr, done.stderr
    assert "Authorization: Bearer ***" in done.stderr
    assert SECRET not in done.stderr and TOKEN not in done.stderr


def test_the_burrow_notifier_route_shows_the_url_without_its_login() -> None:
    shown = alertmanager_notifier_json(f"https://ops:{SECRET}@am:9093", 2, 30.0, 60.0)
    assert shown["url"] == "https://***@am:9093" and SECRET not in str(shown)


def test_check_never_shows_the_pushgateway_login(tmp_path: Path) -> None:
    (port,) = free_ports(1)  # nothing listens: the probe fails and says where it tried
    failed = read_pushgateway(f"http://pg:{SECRET}@127.0.0.1:{port}", Deadline.after(2.0))
    assert isinstance(failed, ProbeFailed)
    assert f"127.0.0.1:{port}" in failed.reason and SECRET not in failed.reason


# --- the one outbound client --------------------------------------------------------------------------------------


def echo(request: Request) -> Response:
    return Response(200, request.headers.get("authorization", "-").encode())


@pytest.fixture(scope="module")
def https_echo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    pem = create_pem_files(tmp_path_factory.mktemp("tls"))
    server = HttpServer(HttpApp(Router([Route("GET", "/echo", echo)])), tls=ServerTls(pem.cert_file, pem.key_file))
    server.start()
    try:
        yield server.url, pem.ca_file
    finally:
        server.stop()


def client_config(ca_file: Path, **login: object) -> HttpClientConfig:
    return HttpClientConfig.model_validate({"ca_file": str(ca_file), **login})


def test_ca_file_is_what_makes_a_private_ca_trusted(https_echo: tuple[str, Path]) -> None:
    url, ca_file = https_echo
    with outbound_client(None, 10, base_url=url) as client, pytest.raises(httpx.ConnectError):
        client.get("/echo")
    with outbound_client(client_config(ca_file), 10, base_url=url) as client:
        assert client.get("/echo").text == "-"


@pytest.mark.parametrize(
    ("login", "in_url", "header"),
    [
        pytest.param({"basic_auth": {"username": "ops", "password": SECRET}}, "", "Basic b3BzOlBMQU5URUQtczNjcjN0",
                     id="basic_auth"),
        pytest.param({"bearer_token": TOKEN}, "", f"Bearer {TOKEN}", id="bearer_token"),
        pytest.param({}, f"ops:{SECRET}@", "Basic b3BzOlBMQU5URUQtczNjcjN0", id="url-userinfo"),
    ],
)  # fmt: skip
def test_the_login_reaches_the_server(
    https_echo: tuple[str, Path], login: dict[str, object], in_url: str, header: str
) -> None:
    url, ca_file = https_echo
    with outbound_client(client_config(ca_file, **login), 10, base_url=url.replace("://", f"://{in_url}")) as client:
        assert client.get("/echo").text == header
        assert SECRET not in repr(client.auth) and TOKEN not in repr(client.auth)


def test_proxy_variables_and_netrc_are_ignored(
    https_echo: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, ca_file = https_echo
    (dead,) = free_ports(1)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{dead}")
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login intruder password from-netrc\n")
    monkeypatch.setenv("NETRC", str(netrc))
    with outbound_client(client_config(ca_file), 10, base_url=url) as client:
        assert client.get("/echo").text == "-"


def test_the_alert_sink_sends_alertings_login(tmp_path: Path) -> None:
    with HttpReceiver() as receiver:
        config = PulseConfig.model_validate(
            {"alerting": {"enabled": True, "alertmanager_url": receiver.url, "bearer_token": TOKEN}}
        ).alerting
        with AlertSink.from_config(config, tmp_path) as sink:
            sink.send([Alert(labels={"alertname": "KafkaPulseTest"})])
        posted = [r for r in receiver.requests if r.path == "/api/v2/alerts"]
        assert posted and posted[0].headers.get("Authorization") == f"Bearer {TOKEN}"


def test_the_pushgateway_push_logs_in_and_never_names_the_login() -> None:
    from slo.output import PushFailed, push_gauges

    with HttpReceiver() as receiver:
        push_gauges([], f"http://pg:{SECRET}@127.0.0.1:{receiver.port}")
        (put,) = [r for r in receiver.requests if r.method == "PUT"]
        assert put.path == "/metrics/job/kafka-pulse-slo"
        assert put.headers.get("Authorization") == "Basic cGc6UExBTlRFRC1zM2NyM3Q="
    (dead,) = free_ports(1)
    with pytest.raises(PushFailed) as refused:
        push_gauges([], f"http://pg:{SECRET}@127.0.0.1:{dead}", timeout_s=2)
    assert f"Pushgateway at http://***@127.0.0.1:{dead}: " in str(refused.value)
    assert SECRET not in str(refused.value)
