"""The one HTTP stack: basic auth, routing, /metrics, health, TLS, the connection cap and bad requests; a real
server on loopback, no Kafka. The same behaviour per command's listener: tests/integration/app/test_listeners.py."""

from __future__ import annotations

import base64
import gzip
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from devstack.tls import create_pem_files
from pulse.config import HttpConfig
from pulse.errors import ConfigError
from pulse.http import BasicAuth, HttpApp, HttpServer, Request, Response, Route, Router, parse_basic_auth
from pulse.polling import poll
from pulse.ports import free_ports

LOGIN = BasicAuth("prometheus", "p4ss:with:colons")


def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("pulse_test_events", "Events for the listener test.", registry=reg).inc(3)
    return reg


def request(path: str, authorization: str | None = None, method: str = "GET") -> Request:
    headers = {"authorization": authorization} if authorization is not None else {}
    return Request(method, path, headers=headers)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def ok(name: str) -> Route:
    return Route("GET", name, lambda r: Response(200, f"{name} {dict(r.params)}".encode()))


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
        pytest.param(basic("prometheus", "p4ss:with:colons").replace("Basic", "BASIC"), 200, id="scheme-upper"),
    ],
)
def test_basic_auth_guards_every_path(authorization: str | None, status: int) -> None:
    app = HttpApp(Router([ok("/metrics"), ok("/v3/kafka")]), LOGIN)
    for path in ("/metrics", "/v3/kafka", "/nowhere"):
        response = app.handle(request(path, authorization))
        expected = 404 if path == "/nowhere" and status == 200 else status
        assert response.status == expected, path
        if expected == 401:
            assert ("WWW-Authenticate", 'Basic realm="kafka-pulse", charset="UTF-8"') in response.headers
            assert b"p4ss" not in response.body


def test_the_parser_keeps_colons_in_the_password() -> None:
    assert parse_basic_auth(basic("u", "a:b:c")) == ("u", "a:b:c")
    assert parse_basic_auth("") is None
    assert "p4ss" not in repr(LOGIN)


def test_routes_match_method_and_pattern_literals_first() -> None:
    router = Router([ok("/v3/kafka/{cluster}"), ok("/v3/kafka/{cluster}/consumer/{group}"), ok("/v3/kafka/config")])
    assert router.handle(request("/v3/kafka/config")).body == b"/v3/kafka/config {}"
    assert router.handle(request("/v3/kafka/dev")).body == b"/v3/kafka/{cluster} {'cluster': 'dev'}"
    got = router.handle(request("/v3/kafka/dev/consumer/a%2Fb/")).body
    assert got == b"/v3/kafka/{cluster}/consumer/{group} {'cluster': 'dev', 'group': 'a/b'}"
    assert router.handle(request("/v3/kafka/dev/other")).status == 404
    refused = router.handle(request("/v3/kafka/dev", method="DELETE"))
    assert refused.status == 405 and ("Allow", "GET") in refused.headers
    teapot = Router([ok("/a")], fallback=lambda r: Response(418))
    assert teapot.handle(request("/b")).status == 418 and teapot.handle(request("/a", method="POST")).status == 418


@pytest.fixture
def serve() -> Iterator[list[HttpServer]]:
    servers: list[HttpServer] = []
    yield servers
    for server in servers:
        server.stop()


def start(servers: list[HttpServer], config: HttpConfig, routes: list[Route] | None = None) -> HttpServer:
    server = HttpServer.from_config(config, registry(), routes or [])
    servers.append(server)
    return server.start()


def test_metrics_over_plain_http_with_a_login(serve: list[HttpServer]) -> None:
    (port,) = free_ports(1)
    config = HttpConfig.model_validate(
        {"listen": f"127.0.0.1:{port}", "basic_auth": {"username": LOGIN.username, "password": LOGIN.password}}
    )
    server = start(serve, config)
    assert server.url == f"http://127.0.0.1:{port}"
    assert httpx.get(f"{server.url}/metrics").status_code == 401
    assert httpx.get(f"{server.url}/metrics", auth=("prometheus", "nope")).status_code == 401
    answer = httpx.get(f"{server.url}/metrics", auth=(LOGIN.username, LOGIN.password))
    assert answer.status_code == 200
    assert "pulse_test_events_total 3.0" in answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert answer.headers["server"] == "kafka-pulse"  # no Python version
    for path, body in (("/-/healthy", "OK\n"), ("/-/ready", "READY\n")):
        assert httpx.get(f"{server.url}{path}", auth=(LOGIN.username, LOGIN.password)).text == body


def test_gzip_when_asked_and_openmetrics_when_accepted(serve: list[HttpServer]) -> None:
    (port,) = free_ports(1)
    server = start(serve, HttpConfig(listen=f"127.0.0.1:{port}"))
    raw = httpx.get(f"{server.url}/metrics", headers={"Accept-Encoding": "gzip"})  # httpx decodes it back
    assert raw.headers["content-encoding"] == "gzip" and "pulse_test_events_total" in raw.text
    with httpx.stream("GET", f"{server.url}/metrics", headers={"Accept-Encoding": "br;q=1, GZIP;q=0.5"}) as response:
        assert gzip.decompress(b"".join(response.iter_raw())).startswith(b"# HELP")
    om = httpx.get(f"{server.url}/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert om.text.endswith("# EOF\n") and om.headers["content-type"].startswith("application/openmetrics-text")
    named = httpx.get(f"{server.url}/metrics", params={"name[]": "pulse_test_events_total"}).text
    assert "pulse_test_events_total 3.0" in named and "pulse_test_events_created" not in named


def test_url_brackets_an_ipv6_host() -> None:
    assert HttpServer(HttpApp(Router()), "::1", 9308).url == "http://[::1]:9308"


def test_a_failing_route_answers_500_and_the_listener_goes_on(serve: list[HttpServer]) -> None:
    def broken(r: Request) -> Response:
        raise RuntimeError("bug")

    (port,) = free_ports(1)
    server = start(serve, HttpConfig(listen=f"127.0.0.1:{port}"), [Route("GET", "/broken", broken)])
    assert httpx.get(f"{server.url}/broken").status_code == 500
    assert httpx.get(f"{server.url}/metrics").status_code == 200
    assert httpx.get(f"{server.url}/absent").status_code == 404


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(data)
        return b"".join(iter(lambda: client.recv(65536), b""))


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"GET /metrics HTTP/x.y\r\n\r\n", id="bad-version"),
        pytest.param(b"GET /metrics HTTP/1.1\r\nContent-Length: ten\r\n\r\n", id="bad-content-length"),
        pytest.param(b"POST /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n", id="negative-content-length"),
    ],
)
def test_a_bad_request_gets_400_in_plain_text(serve: list[HttpServer], data: bytes) -> None:
    (port,) = free_ports(1)
    start(serve, HttpConfig(listen=f"127.0.0.1:{port}"))
    answer = raw_exchange(port, data)
    assert answer.startswith(b"HTTP/1.0 400 "), answer
    assert b"Content-Type: text/plain" in answer and b"<html" not in answer.lower()
    assert httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 200


def test_past_the_connection_cap_new_connections_get_503(serve: list[HttpServer]) -> None:
    """It used to close them without a word: a scraper saw a reset, not why."""
    server = HttpServer(HttpApp(Router([Route("GET", "/", lambda r: Response(200))])), max_connections=2)
    serve.append(server.start())
    silent = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(2)]
    try:
        busy = httpx.get(f"{server.url}/", timeout=10)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert busy.text.startswith("503 Service Unavailable: 2 connections are open")
    finally:
        for client in silent:
            client.close()
    with httpx.Client(timeout=5) as http:  # the slots come back as the silent clients go
        poll(lambda: _answers(http, f"{server.url}/"), bool, 10, "an answer on /")


def _answers(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(url).status_code == 200
    except httpx.HTTPError:
        return False


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
    answer = httpx.get(f"{server.url}/metrics", verify=trusted, auth=(LOGIN.username, LOGIN.password))
    assert answer.status_code == 200 and "pulse_test_events_total" in answer.text


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
    with pytest.raises(ConfigError, match=rf"^lag\.listen: cannot listen on 127\.0\.0\.1:{port}"):
        HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}"), where="lag.listen").start()


def test_the_socket_opens_in_start_not_in_the_constructor() -> None:
    (port,) = free_ports(1)
    server = HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}"), registry())
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/metrics", timeout=5)
    server.start()
    try:
        assert httpx.get(f"{server.url}/metrics", timeout=5).status_code == 200
    finally:
        server.stop()
    server.stop()  # twice is harmless


def test_an_unsupported_method_gets_501_and_head_no_body(serve: list[HttpServer]) -> None:
    (port,) = free_ports(1)
    start(serve, HttpConfig(listen=f"127.0.0.1:{port}"))
    head = raw_exchange(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 501 ") and head.endswith(b"\r\n\r\n")
    assert raw_exchange(port, b"OPTIONS /metrics HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.0 501 ")


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_silent_client_does_not_hold_up_a_scrape(serve: list[HttpServer], tmp_path: Path, tls: bool) -> None:
    """A client that connects and never speaks (never starts its TLS handshake, or never sends its request) keeps
    only its own thread: the handshake runs there, not in accept()."""
    pem = create_pem_files(tmp_path)
    (port,) = free_ports(1)
    files = {"tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)}} if tls else {}
    server = start(serve, HttpConfig.model_validate({"listen": f"127.0.0.1:{port}", **files}))
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(pem.ca_file)) if tls else True
    with socket.create_connection(("127.0.0.1", port), timeout=5):  # connected, silent for the whole block
        assert httpx.get(f"{server.url}/metrics", verify=verify, timeout=2).status_code == 200
