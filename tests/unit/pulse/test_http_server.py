"""The shared HTTP listener: basic auth, routing, /metrics, TLS; a real server on loopback, no Kafka (issue #3)."""

from __future__ import annotations

import base64
import gzip
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from devstack.tls import create_pem_files
from pulse.config import HttpConfig
from pulse.errors import ConfigError
from pulse.http_server import BasicAuth, HttpApp, HttpServer, Request, Response
from pulse.ports import free_ports

LOGIN = BasicAuth("prometheus", "p4ss:with:colons")


def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("pulse_test_events", "Events for the listener test.", registry=reg).inc(3)
    return reg


def request(path: str, authorization: str | None = None) -> Request:
    headers = {"authorization": authorization} if authorization is not None else {}
    return Request(path, {}, headers)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        pytest.param(None, 401, id="no-header"),
        pytest.param(basic("prometheus", "wrong"), 401, id="wrong-password"),
        pytest.param(basic("grafana", "p4ss:with:colons"), 401, id="wrong-user"),
        pytest.param("Bearer abc", 401, id="other-scheme"),
        pytest.param("Basic !!notbase64", 401, id="malformed"),
        pytest.param("Basic " + base64.b64encode(b"prometheus").decode(), 401, id="no-colon"),
        pytest.param(basic("prometheus", "p4ss:with:colons"), 200, id="right-login"),
        pytest.param(basic("prometheus", "p4ss:with:colons").replace("Basic", "basic"), 200, id="scheme-any-case"),
    ],
)
def test_basic_auth_guards_every_path(authorization: str | None, status: int) -> None:
    app = HttpApp(registry(), {"/v3/kafka": lambda r: Response(200, b"{}")}, LOGIN)
    for path in ("/metrics", "/v3/kafka", "/nowhere"):
        response = app.handle(request(path, authorization))
        expected = 404 if path == "/nowhere" and status == 200 else status
        assert response.status == expected, path
        if expected == 401:
            assert ("WWW-Authenticate", 'Basic realm="kafka-pulse", charset="UTF-8"') in response.headers
            assert b"p4ss" not in response.body


def test_longest_prefix_route_gets_the_request() -> None:
    seen: list[str] = []

    def route(name: str):  # type: ignore[no-untyped-def]
        def handle(r: Request) -> Response:
            seen.append(f"{name} {r.path}")
            return Response(200)

        return handle

    app = HttpApp(None, {"/v3": route("v3"), "/v3/kafka": route("kafka")})
    for path in ("/v3/kafka/dev/consumer", "/v3/other", "/v3", "/v3kafka"):
        app.handle(request(path))
    assert seen == ["kafka /v3/kafka/dev/consumer", "v3 /v3/other", "v3 /v3"]


@pytest.fixture
def serve() -> Iterator[list[HttpServer]]:
    servers: list[HttpServer] = []
    yield servers
    for server in servers:
        server.stop()


def start(servers: list[HttpServer], config: HttpConfig, routes: dict | None = None) -> HttpServer:  # type: ignore[type-arg]
    server = HttpServer.from_config(config, registry(), routes).start()
    servers.append(server)
    return server


def test_metrics_over_plain_http_with_a_login(serve: list[HttpServer]) -> None:
    (port,) = free_ports(1)
    config = HttpConfig.model_validate(
        {"listen": f"127.0.0.1:{port}", "basic_auth": {"username": LOGIN.username, "password": LOGIN.password}}
    )
    server = start(serve, config)
    assert server.url == f"http://127.0.0.1:{port}"
    assert httpx.get(f"{server.url}/metrics").status_code == 401
    assert httpx.get(f"{server.url}/metrics", auth=("prometheus", "nope")).status_code == 401
    ok = httpx.get(f"{server.url}/metrics", auth=(LOGIN.username, LOGIN.password))
    assert ok.status_code == 200
    assert "pulse_test_events_total 3.0" in ok.text
    assert ok.headers["content-type"].startswith("text/plain; version=0.0.4")


def test_gzip_when_asked_and_openmetrics_when_accepted(serve: list[HttpServer]) -> None:
    (port,) = free_ports(1)
    server = start(serve, HttpConfig(listen=f"127.0.0.1:{port}"))
    raw = httpx.get(f"{server.url}/metrics", headers={"Accept-Encoding": "gzip"})  # httpx decodes it back
    assert raw.headers["content-encoding"] == "gzip" and "pulse_test_events_total" in raw.text
    with httpx.stream("GET", f"{server.url}/metrics", headers={"Accept-Encoding": "gzip"}) as response:
        assert gzip.decompress(b"".join(response.iter_raw())).startswith(b"# HELP")
    om = httpx.get(f"{server.url}/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert om.text.endswith("# EOF\n")


def test_url_brackets_an_ipv6_host() -> None:
    assert HttpServer("::1", 9308, HttpApp()).url == "http://[::1]:9308"


def test_a_failing_route_answers_500_and_the_listener_goes_on(serve: list[HttpServer]) -> None:
    def broken(r: Request) -> Response:
        raise RuntimeError("bug")

    (port,) = free_ports(1)
    server = start(serve, HttpConfig(listen=f"127.0.0.1:{port}"), {"/broken": broken})
    assert httpx.get(f"{server.url}/broken").status_code == 500
    assert httpx.get(f"{server.url}/metrics").status_code == 200
    assert httpx.get(f"{server.url}/absent").status_code == 404


def test_tls_serves_https_and_drops_plain_http_without_stopping(serve: list[HttpServer], tmp_path: Path) -> None:
    pem = create_pem_files(tmp_path)
    (port,) = free_ports(1)
    config = HttpConfig.model_validate(
        {
            "listen": f"127.0.0.1:{port}",
            "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)},
            "basic_auth": {"username": LOGIN.username, "password": LOGIN.password},
        }
    )
    server = start(serve, config)
    assert server.url == f"https://127.0.0.1:{port}"
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    with pytest.raises(httpx.ConnectError):  # not trusting our CA
        httpx.get(f"{server.url}/metrics", verify=ssl.create_default_context(), timeout=10)
    trusted = ssl.create_default_context(cafile=str(pem.ca_file))
    assert httpx.get(f"{server.url}/metrics", verify=trusted).status_code == 401
    ok = httpx.get(f"{server.url}/metrics", verify=trusted, auth=(LOGIN.username, LOGIN.password))
    assert ok.status_code == 200 and "pulse_test_events_total" in ok.text


def test_a_bad_certificate_or_busy_port_is_a_config_error_naming_the_key(
    serve: list[HttpServer], tmp_path: Path
) -> None:
    pem = create_pem_files(tmp_path)
    (port,) = free_ports(1)
    swapped = HttpConfig.model_validate(
        {"listen": f"127.0.0.1:{port}", "tls": {"cert_file": str(pem.key_file), "key_file": str(pem.cert_file)}}
    )
    with pytest.raises(ConfigError, match=r"^http\.tls: cannot load certificate"):
        HttpServer.from_config(swapped).start()
    start(serve, HttpConfig(listen=f"127.0.0.1:{port}"))
    with pytest.raises(ConfigError, match=rf"^http\.listen: cannot listen on 127\.0\.0\.1:{port}"):
        HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}")).start()
