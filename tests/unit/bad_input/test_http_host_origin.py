"""Host, Origin and Content-Type on the one HTTP stack (pulse/http/guards.py): a DNS-rebound name gets 421, a write
from another site's page 403, a write whose body is not JSON 415, while curl with JSON (Burrow's clients) goes on
working. The rules as a pure function, then the same rows through a real listener on loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from pulse.config import HttpConfig
from pulse.http import HttpApp, HttpServer, Request, Response, Route, Router
from pulse.http.guards import HostAddress, host_problem
from pulse.ports import free_ports

OWN = ("127.0.0.1:9308", "10.0.0.5:9308")
"""The bound address and the one the connection came in on (a listener on 0.0.0.0 reached at 10.0.0.5)."""
JSON = "application/json"
TO_OWN = {"host": "127.0.0.1:9308"}
"""A request addressed to the bound address, as curl sends it."""
JSON_TO_OWN = TO_OWN | {"content-type": JSON}
"""A write with a JSON body addressed to the bound address (`curl --json`), to which a row adds the header it tests."""


@dataclass(frozen=True)
class Case:
    method: str
    headers: dict[str, str]
    status: int
    body: bytes = b'{"level": "info"}'
    allowed_hosts: tuple[str, ...] = ()


def changed(request: Request) -> Response:
    return Response(200, b"changed\n")


CASES = [
    # Host: the listener's own address, loopback names with any port, http.allowed_hosts; else 421.
    pytest.param(Case("GET", TO_OWN, 200), id="host-bound-address"),
    pytest.param(Case("GET", {"host": "10.0.0.5:9308"}, 200), id="host-connection-address"),
    pytest.param(Case("GET", {}, 200), id="host-absent-http10"),
    pytest.param(Case("GET", {"host": "localhost"}, 200), id="host-localhost"),
    pytest.param(Case("GET", {"host": "LOCALHOST:8080"}, 200), id="host-localhost-forwarded-port"),
    pytest.param(Case("GET", {"host": "127.0.0.1:1234"}, 200), id="host-loopback-any-port"),
    pytest.param(Case("GET", {"host": "[::1]:9308"}, 200), id="host-ipv6-loopback"),
    pytest.param(Case("GET", {"host": "evil.example:9308"}, 421), id="host-rebound-name"),
    pytest.param(Case("GET", {"host": "10.0.0.5:9309"}, 421), id="host-own-ip-other-port"),
    pytest.param(Case("GET", {"host": "10.0.0.5"}, 421), id="host-own-ip-default-port"),
    pytest.param(Case("GET", {"host": "localhost.evil.example"}, 421), id="host-localhost-suffix"),
    pytest.param(Case("GET", {"host": "::1"}, 421), id="host-ipv6-unbracketed"),
    pytest.param(Case("GET", {"host": "user@127.0.0.1"}, 421), id="host-userinfo"),
    pytest.param(Case("GET", {"host": "127.0.0.1:0"}, 421), id="host-port-zero"),
    pytest.param(Case("GET", {"host": "pulse.example"}, 200, allowed_hosts=("pulse.example",)), id="allowed-any-port"),
    pytest.param(
        Case("GET", {"host": "pulse.example:9308"}, 200, allowed_hosts=("pulse.example",)), id="allowed-name-port"
    ),
    pytest.param(
        Case("GET", {"host": "pulse.example:1"}, 421, allowed_hosts=("pulse.example:9308",)), id="allowed-other-port"
    ),
    pytest.param(Case("POST", {"host": "evil.example", "content-type": JSON}, 421), id="host-checked-on-writes"),
    # Writes: JSON bodies only (415), not from another site's page (403).
    pytest.param(Case("POST", JSON_TO_OWN, 200), id="write-curl-json"),
    pytest.param(
        Case("POST", TO_OWN | {"content-type": "Application/JSON; charset=utf-8"}, 200), id="write-json-with-charset"
    ),
    pytest.param(Case("POST", TO_OWN | {"content-type": "text/plain"}, 415), id="write-text-plain"),
    pytest.param(Case("POST", TO_OWN | {"content-type": "application/x-www-form-urlencoded"}, 415), id="write-form"),
    pytest.param(Case("POST", TO_OWN, 415), id="write-no-content-type"),
    pytest.param(Case("DELETE", TO_OWN, 200, body=b""), id="delete-without-body"),
    pytest.param(Case("POST", JSON_TO_OWN | {"origin": "http://127.0.0.1:9308"}, 200), id="origin-same"),
    pytest.param(
        Case("POST", {"host": "localhost:9308", "content-type": JSON, "origin": "http://localhost:9308"}, 200),
        id="origin-same-localhost",
    ),
    pytest.param(Case("POST", JSON_TO_OWN | {"origin": "https://evil.example"}, 403), id="origin-other-site"),
    pytest.param(Case("POST", JSON_TO_OWN | {"origin": "http://127.0.0.1:3000"}, 403), id="origin-other-port"),
    pytest.param(Case("POST", JSON_TO_OWN | {"origin": "https://127.0.0.1:9308"}, 403), id="origin-other-scheme"),
    pytest.param(Case("POST", JSON_TO_OWN | {"origin": "null"}, 403), id="origin-null"),
    pytest.param(Case("DELETE", TO_OWN | {"origin": "https://evil.example"}, 403, body=b""), id="origin-delete"),
    pytest.param(Case("POST", JSON_TO_OWN | {"sec-fetch-site": "cross-site"}, 403), id="fetch-site-cross-site"),
    pytest.param(Case("POST", JSON_TO_OWN | {"sec-fetch-site": "same-site"}, 403), id="fetch-site-same-site"),
    pytest.param(Case("POST", JSON_TO_OWN | {"sec-fetch-site": "same-origin"}, 200), id="fetch-site-same-origin"),
    pytest.param(Case("POST", JSON_TO_OWN | {"sec-fetch-site": "none"}, 200), id="fetch-site-none"),
    pytest.param(
        Case("GET", TO_OWN | {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}, 200),
        id="reads-keep-no-origin-rule",
    ),
]


def app(allowed_hosts: tuple[str, ...] = ()) -> HttpApp:
    routes = [
        Route("GET", "/v3/kafka", changed),
        Route("POST", "/v3/admin/loglevel", changed),
        Route("DELETE", "/v3/admin/loglevel", changed),
    ]
    return HttpApp(Router(routes), allow_unauthenticated_writes=True, allowed_hosts=allowed_hosts)


@pytest.mark.parametrize("case", CASES)
def test_the_host_origin_and_content_type_rules(case: Case) -> None:
    path = "/v3/kafka" if case.method == "GET" else "/v3/admin/loglevel"
    body = case.body if case.method != "GET" else b""
    request = Request(case.method, path, headers=case.headers, body=body, own_hosts=OWN)
    response = app(case.allowed_hosts).handle(request)
    assert response.status == case.status, response.body
    if case.status != 200:
        assert response.body.startswith(f"{case.status} ".encode()) and response.content_type.startswith("text/plain")


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("Example.COM:80", HostAddress("example.com", 80)),
        ("[::1]", HostAddress("[::1]", None)),
        ("[::1]:9", HostAddress("[::1]", 9)),
        ("a:b", None),
        ("[::1", None),
        ("[::1]x", None),
        ("a/b", None),
        ("", None),
        ("a:70000", None),
    ],
)
def test_a_host_value_is_split_or_refused(value: str, parsed: HostAddress | None) -> None:
    assert HostAddress.parse(value) == parsed


def test_a_tls_listener_on_443_answers_a_host_without_port() -> None:
    own = [HostAddress("10.0.0.5", 443)]
    assert host_problem("10.0.0.5", own, (), tls=True) is None
    assert host_problem("10.0.0.5", own, (), tls=False) is not None


@pytest.mark.parametrize(
    ("value", "ok"),
    [("pulse.example.com", True), ("Pulse.Example.com:9308", True), ("[::1]:1", True), ("http://x", False),
     ("x/y", False), ("a@b", False), ("x:0", False), ("", False)],
)  # fmt: skip
def test_allowed_hosts_is_declared_once_and_validated(value: str, ok: bool) -> None:
    assert HttpConfig().allowed_hosts == []
    if ok:
        assert HttpConfig.model_validate({"allowed_hosts": [value]}).allowed_hosts == [value.lower()]
    else:
        with pytest.raises(ValueError, match="is not host or host:port"):
            HttpConfig.model_validate({"allowed_hosts": [value]})


# --- through a real listener on loopback -------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[HttpServer]:
    (port,) = free_ports(1)
    config = HttpConfig.model_validate(
        {"listen": f"127.0.0.1:{port}", "allow_unauthenticated_writes": True, "allowed_hosts": ["pulse.example"]}
    )
    server = HttpServer.from_config(config, routes=app().router.routes).start()
    try:
        yield server
    finally:
        server.stop()


def raw(port: int, request: str) -> int:
    """The status of one raw request (httpx would not send a Host of our choosing on every version)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(request.encode())
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_a_real_listener_applies_the_rules(listener: HttpServer) -> None:
    port = listener.port
    with httpx.Client(base_url=listener.url, timeout=5, trust_env=False) as http:
        assert http.get("/v3/kafka").status_code == 200
        assert http.post("/v3/admin/loglevel", json={"level": "info"}).status_code == 200  # curl --json
        assert http.post("/v3/admin/loglevel", content=b'{"level": "panic"}').status_code == 415
        plain = http.post("/v3/admin/loglevel", content=b"{}", headers={"Content-Type": "text/plain"})
        assert plain.status_code == 415 and "application/json" in plain.text
        hostile = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
        assert http.post("/v3/admin/loglevel", json={}, headers=hostile).status_code == 403
        assert http.delete("/v3/admin/loglevel").status_code == 200
    for host, status in (
        (f"127.0.0.1:{port}", 200),
        (f"localhost:{port}", 200),
        ("pulse.example", 200),
        (f"rebound.evil.example:{port}", 421),
    ):
        assert raw(port, f"GET /v3/kafka HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n") == status, host
