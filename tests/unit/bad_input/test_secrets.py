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
from kafka_pulse.check.probe.slo_budgets import read_pushgateway
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
    pytest.param(
        f"alertmanager https://ops:{SECRET}@am.example.com:9093 is down",
        "https://***@am.example.com:9093",
        id="userinfo",
    ),
    pytest.param(f"https://ops:{SECRET}@x@am:9093/api", "https://***@am:9093/api", id="raw-at-in-password"),
    pytest.param(
        f'{{"url": "http://{SECRET}@h:1", "x": "a@b"}}', '{"url": "http://***@h:1", "x": "a@b"}', id="json-stays-json"
    ),
    pytest.param(f"Authorization: Bearer {TOKEN}", "Authorization: Bearer ***", id="bearer-header"),
    pytest.param(f"{{'authorization': 'Basic {SECRET}'}}", "{'authorization': 'Basic ***'}", id="header-dict"),
    pytest.param(f"GET /metrics?token={TOKEN}&x=1", "GET /metrics?token=***&x=1", id="query-token"),
    pytest.param(f"sasl.password={SECRET}", "sasl.password=***", id="key-value"),
]


@pytest.mark.parametrize(("text", "shown"), TEXTS)
def test_redact_text_removes_the_secret_and_keeps_the_rest(text: str, shown: str) -> None:
    assert SECRET not in redact_text(text) and TOKEN not in redact_text(text)
    assert shown in redact_text(text)


def test_text_without_secrets_is_unchanged() -> None:
    plain = "http.basic_auth.password: is empty; see http://127.0.0.1:9093/api/v2/alerts or mail ops@example.com"
    assert redact_text(plain) == plain
    assert redact_url("http://127.0.0.1:9093") == "http://127.0.0.1:9093"
    assert redact_url(f"https://u:{SECRET}@am:9093/x?y=1") == "https://***@am:9093/x?y=1"


# Every form a client library or a header dump prints a secret in, with the exact text shown: the secret masked,
# the key, the scheme, the quotes and the rest kept (so JSON stays JSON).
FORMS = [
    pytest.param(f"Starting KafkaAdminClient with configuration: {{'bootstrap_servers': ['b:9093'], "
                 f"'sasl_plain_username': 'admin', 'sasl_plain_password': '{SECRET}', 'ssl_password': None}}",
                 "Starting KafkaAdminClient with configuration: {'bootstrap_servers': ['b:9093'], "
                 "'sasl_plain_username': 'admin', 'sasl_plain_password': '***', 'ssl_password': None}",
                 id="kafka-python-config-dict"),
    pytest.param(f"{{'ssl_password': b'{SECRET}', 'ssl_check_hostname': True}}",
                 "{'ssl_password': '***', 'ssl_check_hostname': True}", id="dict-bytes-value"),
    pytest.param(f"{{'sasl_plain_password': \"it's-{SECRET}\"}}", "{'sasl_plain_password': \"***\"}",
                 id="dict-double-quoted-value"),
    pytest.param(f'{{"password": "{SECRET}\\"x", "user": "ops"}}', '{"password": "***", "user": "ops"}',
                 id="json-escaped-quote"),
    pytest.param(f'{{"api_key": 12345, "token": null, "client_secret": "{SECRET}"}}',
                 '{"api_key": "***", "token": null, "client_secret": "***"}', id="json-bare-and-null"),
    pytest.param(f"SaslConfig(mechanism='SCRAM-SHA-512', password='{SECRET}')",
                 "SaslConfig(mechanism='SCRAM-SHA-512', password='***')", id="repr-kwargs"),
    pytest.param(f"openssl pkcs12 -passin passphrase={SECRET} done", "openssl pkcs12 -passin passphrase=*** done",
                 id="passphrase"),
    pytest.param(f"x_credentials={SECRET} apikey={TOKEN} my.api-key={TOKEN} PRIVATE_KEY={SECRET} passwd={SECRET}",
                 "x_credentials=*** apikey=*** my.api-key=*** PRIVATE_KEY=*** passwd=***", id="secret-words"),
    pytest.param(f"Authorization: Token {TOKEN}", "Authorization: Token ***", id="token-scheme"),
    pytest.param(f"authorization: basic {SECRET} was refused", "authorization: basic *** was refused",
                 id="basic-lower-case"),
    pytest.param(f"Authorization: {TOKEN}", "Authorization: ***", id="no-scheme"),
    pytest.param(f"Proxy-Authorization: AWS4-HMAC-SHA256 Credential=AKIA/x, SignedHeaders=host, Signature={TOKEN}",
                 "Proxy-Authorization: AWS4-HMAC-SHA256 ***", id="parameter-list"),
    pytest.param(f'Authorization: Digest username="ops", response="{TOKEN}"', "Authorization: Digest ***",
                 id="digest"),
    pytest.param(f'{{"Authorization": "Negotiate {TOKEN}"}}', '{"Authorization": "Negotiate ***"}',
                 id="header-json"),
    pytest.param(f"GET https://h/x?access_token={TOKEN}&sig={TOKEN}&X-Amz-Signature={TOKEN}&key={TOKEN}&y=1#k",
                 "GET https://h/x?access_token=***&sig=***&X-Amz-Signature=***&key=***&y=1#k", id="query-parameters"),
    pytest.param(f"POST http://am/api?auth={TOKEN}&jwt={TOKEN};password={SECRET}",
                 "POST http://am/api?auth=***&jwt=***;password=***", id="query-auth-jwt"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "shown"), FORMS)
def test_redact_text_masks_every_form_exactly(text: str, shown: str) -> None:
    assert redact_text(text) == shown


ORDINARY = [
    "consumer group payments on prod: lag 5 (OK), worst partition orders[3]",
    "http.basic_auth.password: is empty; give the password",
    "topic=orders partition=3 key=foo offset=42",
    "authorization failed for user ops; see GET http://127.0.0.1:9093/api/v2/alerts?silenced=false&active=true",
    "{'bootstrap_servers': ['b:9093'], 'ssl_password': None, 'security_protocol': 'SASL_SSL'}",
    '{"password": null, "passwords_rotated": true, "token": ""}',
    "brokers 1,2,3 up; keyboard=us; monkey=1",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"https://ops:{SECRET}@am:9093/x?token={TOKEN}&y=1", "https://***@am:9093/x?token=***&y=1"),
        (f"http://pg:9091/metrics?signature={TOKEN}", "http://pg:9091/metrics?signature=***"),
        ("http://127.0.0.1:9093/api/v2/alerts?active=true", "http://127.0.0.1:9093/api/v2/alerts?active=true"),
    ],
)
def test_redact_url_masks_the_login_and_secret_query_parameters(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# --- config errors: every command that refuses the file, and check --------------------------------------------


@dataclass(frozen=True)
class Planted:
    config: dict[str, object]
    key: str
    """The key path the message must name."""


def source(url: str) -> dict[str, object]:
    return {"name": "p", "source": {"type": "prometheus", "url": url}, "good": "vector(1)", "total": "vector(1)"}


PLANTED = [
    pytest.param(
        Planted(
            {"alerting": {"enabled": True, "alertmanager_url": f"ftp://ops:{SECRET}@am:9093"}},
            "alerting.alertmanager_url",
        ),
        id="alertmanager-url-scheme",
    ),
    pytest.param(
        Planted(
            {"alerting": {"alertmanager_url": f"http://ops:{SECRET}@am:9093", "timeout_s": 1000}}, "alerting.timeout_s"
        ),
        id="valid-url-other-key",
    ),
    pytest.param(
        Planted({"slo": {"pushgateway_url": f"gopher://pg:{SECRET}@pg:9091"}}, "slo.pushgateway_url"),
        id="pushgateway-url",
    ),
    pytest.param(
        Planted({"slos": [source(f"tcp://prom:{SECRET}@prom:9090")]}, "slos[0].source.url"), id="prometheus-source-url"
    ),
    pytest.param(Planted({"alerting": {"bearer_token": [TOKEN]}}, "alerting.bearer_token"), id="token-wrong-type"),
    pytest.param(
        Planted(
            {"alerting": {"basic_auth": {"username": "u", "password": SECRET}, "bearer_token": TOKEN}},
            "alerting.bearer_token",
        ),
        id="token-and-login",
    ),
    pytest.param(
        Planted({"http": {"basic_auth": {"username": "u", "password": [SECRET]}}}, "http.basic_auth.password"),
        id="password-wrong-type",
    ),
    pytest.param(
        Planted(
            {"clusters": [{"name": "c", "bootstrap_servers": [f"u:{SECRET}@kafka:9092"]}]},
            "clusters[0].bootstrap_servers[0]",
        ),
        id="userinfo-in-host-port",
    ),
]


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


PIN_PROGRAM = """
import logging, sys, warnings
from lag.serve.routes import BurrowApi, invalid_request
from lag.service import LagService
from pulse.config import LagConfig
from pulse.http import Request, Router
from pulse.lifecycle import PINNED_LOGGERS, configure_logging

configure_logging()
api = Router(BurrowApi(LagService(LagConfig())).routes(), invalid_request)
answer = api.handle(Request("POST", "/v3/admin/loglevel", body=b'{"level": "debug"}', listener="127.0.0.1:1"))
assert answer.status == 200, answer.body
logging.getLogger("pulse.probe").debug("ours at debug")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import kafka
try:  # kafka-python logs its whole config at DEBUG when an admin client starts; nothing listens on port 1
    kafka.KafkaAdminClient(
        bootstrap_servers=["127.0.0.1:1"], security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
        sasl_plain_username="u", sasl_plain_password=sys.argv[1], request_timeout_ms=1000,
        api_version_auto_timeout_ms=1000,
    )
except kafka.errors.KafkaError:
    pass
for name in PINNED_LOGGERS:
    logging.getLogger(name + ".child").info("%s %s", name, sys.argv[1])
logging.getLogger("kafka.conn").setLevel(logging.DEBUG)  # lowering a pinned logger itself is not enough either
logging.getLogger("kafka.conn").debug("lowered %s", sys.argv[1])
logging.getLogger("kafka").warning("kafka warns at debug")
logging.getLogger().setLevel(logging.ERROR)
logging.getLogger("kafka").warning("kafka warns at error %s", sys.argv[1])
logging.getLogger("pulse.probe").error("ours at error")
"""


def test_third_party_loggers_stay_at_warning_after_the_loglevel_route_sets_debug() -> None:
    # A fresh interpreter: configure_logging as every long-running command calls it, the root level then set to
    # debug through the real /v3/admin/loglevel route, and kafka-python's admin client started with a password.
    planted = "PLANTED-pin-" + "s3cr3t"
    done = subprocess.run(
        [sys.executable, "-c", PIN_PROGRAM, planted], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = [line.split(" ", 2)[2] for line in done.stderr.splitlines()]  # without the time stamp
    assert "DEBUG pulse.probe: ours at debug" in lines, done.stderr  # the route's debug level took effect
    assert planted not in done.stderr, done.stderr
    assert [line for line in lines if line.startswith(("DEBUG", "INFO")) and "pulse.probe" not in line] == []
    assert "WARNING kafka: kafka warns at debug" in lines
    assert "kafka warns at error" not in done.stderr  # never louder than the root level either
    assert lines[-1] == "ERROR pulse.probe: ours at error"


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
        pytest.param(
            {"basic_auth": {"username": "ops", "password": SECRET}},
            "",
            "Basic b3BzOlBMQU5URUQtczNjcjN0",
            id="basic_auth",
        ),
        pytest.param({"bearer_token": TOKEN}, "", f"Bearer {TOKEN}", id="bearer_token"),
        pytest.param({}, f"ops:{SECRET}@", "Basic b3BzOlBMQU5URUQtczNjcjN0", id="url-userinfo"),
    ],
)
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
