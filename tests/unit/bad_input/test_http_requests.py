"""Hostile HTTP requests against the one HTTP stack (pulse.http), in process on loopback: each row a raw request
and the answer it must get, in plain text, with no traceback logged and the listener still serving afterwards.
The same requests against every command's real listener: tests/integration/app/test_listeners.py."""

from __future__ import annotations

import base64
import contextlib
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from pulse.config import HttpConfig
from pulse.http import BasicAuth, HttpApp, HttpServer, Response, Route, Router, metrics_routes
from pulse.polling import poll
from pulse.ports import free_ports
from tests.support.http_drip import drip, read_all

DEADLINE_S = 2.0
"""The test listener's request deadline (30 s in production)."""
SECRET = "hunter2-" + "never-shown"


@dataclass(frozen=True)
class Case:
    data: bytes
    status: int
    says: str
    """A fragment the plain-text body must hold: the reason, so the client learns what was wrong."""


def head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


GET = "GET /metrics HTTP/1.1"
POST = "POST /v3/admin/loglevel HTTP/1.1"
CASES = [
    # Content-Length: once `abc` got no answer and a traceback.
    pytest.param(Case(head(POST, "Content-Length: abc"), 400, "'abc' is not a byte count"), id="length-abc"),
    pytest.param(Case(head(POST, "Content-Length: -1"), 400, "'-1' is not a byte count"), id="length-negative"),
    pytest.param(Case(head(POST, "Content-Length: \xb2"), 400, "is not a byte count"), id="length-superscript-digit"),
    pytest.param(Case(head(POST, "Content-Length: 1.5"), 400, "is not a byte count"), id="length-fraction"),
    pytest.param(Case(head(POST, "Content-Length: 2", "Content-Length: 3"), 400, "more than one"), id="length-twice"),
    pytest.param(Case(head(POST, "Content-Length: " + "9" * 40), 413, "limited to 65536"), id="length-huge"),
    pytest.param(
        Case(head(POST, "Transfer-Encoding: chunked"), 501, "send the body with Content-Length"), id="chunked"
    ),
    # Header lines.
    pytest.param(Case(head(GET, "Host: x", "no colon here"), 400, "malformed header line"), id="header-no-colon"),
    pytest.param(Case(head(GET, "Host : x"), 400, "malformed header line"), id="header-space-before-colon"),
    pytest.param(Case(head(GET, "X-A: one", " folded"), 400, "folded line"), id="header-folded"),
    pytest.param(Case(head(GET, "X-A: nul\x00byte"), 400, "control character"), id="header-nul"),
    pytest.param(Case(head(GET, "X-A: " + "a" * 70_000), 431, "Line too long"), id="header-line-too-long"),
    pytest.param(Case(head(GET, *(f"X-{i}: v" for i in range(101))), 431, "Too many headers"), id="headers-too-many"),
    pytest.param(
        Case(head(GET, *(f"X-{i}: {'v' * 8000}" for i in range(9))), 431, "65536 bytes in all"), id="headers-huge"
    ),
    # Request lines.
    pytest.param(Case(b"GET /metrics HTTP/x.y\r\n\r\n", 400, "Bad request version"), id="line-bad-version"),
    pytest.param(Case(b"GET /metrics HTTP/2.0\r\n\r\n", 505, "Invalid HTTP version"), id="line-http2"),
    pytest.param(Case(b"\r\n", 400, "empty request line"), id="line-empty"),
    pytest.param(Case(b"GARBAGE\r\n\r\n", 400, "Bad request syntax"), id="line-one-word"),
    pytest.param(Case(b"GET /metrics\r\n\r\n", 400, "names no HTTP version"), id="line-http09"),
    pytest.param(Case(b"GET /metrics extra HTTP/1.1\r\n\r\n", 400, "Bad request syntax"), id="line-four-words"),
    pytest.param(Case(b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "URI Too Long"), id="line-too-long"),
    pytest.param(Case(head("PROPFIND /metrics HTTP/1.1"), 501, "Unsupported method"), id="method-unknown"),
    pytest.param(Case(head("get /metrics HTTP/1.1"), 501, "Unsupported method"), id="method-lower-case"),
    # Writes on a listener without a login: refused unless http.allow_unauthenticated_writes.
    pytest.param(
        Case(head("DELETE /v3/kafka/c/consumer/g HTTP/1.1"), 403, "http.allow_unauthenticated_writes: true"),
        id="write-delete",
    ),
    pytest.param(Case(head(POST, "Content-Length: 2") + b"{}", 403, "POST can change state"), id="write-post"),
    pytest.param(Case(head("PUT /metrics HTTP/1.1", "Content-Length: 0"), 403, "set http.basic_auth"), id="write-put"),
]


def routes() -> list[Route]:
    registry = CollectorRegistry()
    Counter("pulse_bad_input_events", "Events for the bad-input test.", registry=registry).inc()
    changed = Response(200, b"changed\n")
    return [
        *metrics_routes(registry),
        Route("DELETE", "/v3/kafka/{cluster}/consumer/{group}", lambda r: changed),
        Route("POST", "/v3/admin/loglevel", lambda r: changed),
    ]


def serve(login: BasicAuth | None = None, allow_writes: bool = False, max_connections: int = 64) -> HttpServer:
    app = HttpApp(Router(routes()), login, allow_writes)
    return HttpServer(app, max_connections=max_connections, request_timeout_s=DEADLINE_S).start()


@pytest.fixture
def server(caplog: pytest.LogCaptureFixture) -> Iterator[HttpServer]:
    """A listener without a login; afterwards nothing was logged above INFO and it still serves."""
    caplog.set_level(logging.DEBUG, logger="pulse.http")
    listener = serve()
    try:
        yield listener
        assert httpx.get(f"{listener.url}/metrics", timeout=5).status_code == 200
    finally:
        listener.stop()
    loud = [r for r in caplog.records if r.levelno > logging.INFO or r.exc_info]
    assert not loud, [r.getMessage() for r in loud]


def exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # answered and closed before it read all
            client.sendall(data)
        return read_all(client)


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_request_gets_a_plain_answer_naming_the_problem(server: HttpServer, case: Case) -> None:
    answer = exchange(server.port, case.data)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(f"HTTP/1.0 {case.status} ".encode()), answer[:300]
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"Content-Type: text/plain; charset=utf-8" in headers
    assert b"\r\nServer: kafka-pulse\r\n" in b"\r\n" + headers  # no Python version
    assert case.says.encode() in body, body


def test_writes_pass_with_the_flag_or_the_login() -> None:
    login = BasicAuth("ops", SECRET)
    flagged, guarded = serve(allow_writes=True), serve(login=login)
    try:
        assert httpx.delete(f"{flagged.url}/v3/kafka/c/consumer/g", timeout=5).text == "changed\n"
        assert httpx.post(f"{flagged.url}/v3/admin/loglevel", json={}, timeout=5).status_code == 200
        refused = httpx.delete(f"{guarded.url}/v3/kafka/c/consumer/g", timeout=5)
        assert refused.status_code == 401 and SECRET not in refused.text
        done = httpx.delete(f"{guarded.url}/v3/kafka/c/consumer/g", auth=("ops", SECRET), timeout=5)
        assert done.text == "changed\n"
        assert httpx.get(f"{guarded.url}/metrics", auth=("ops", SECRET), timeout=5).status_code == 200
    finally:
        flagged.stop()
        guarded.stop()


def test_the_config_key_allows_writes_and_defaults_to_refusing() -> None:
    assert HttpConfig().allow_unauthenticated_writes is False
    (port,) = free_ports(1)
    config = HttpConfig.model_validate({"listen": f"127.0.0.1:{port}", "allow_unauthenticated_writes": True})
    listener = HttpServer.from_config(config, routes=routes()).start()
    try:
        assert httpx.delete(f"{listener.url}/v3/kafka/c/consumer/g", timeout=5).status_code == 200
    finally:
        listener.stop()


@pytest.mark.parametrize(
    "start",
    [
        pytest.param(b"GET /metr", id="in-the-request-line"),
        pytest.param(b"GET /metrics HTTP/1.1\r\nX-Slow: ", id="in-the-headers"),
        pytest.param(b"POST /v3/admin/loglevel HTTP/1.1\r\nContent-Length: 100\r\n\r\n{", id="in-the-body"),
    ],
)
def test_a_request_dripped_past_its_deadline_gets_408_and_is_closed(server: HttpServer, start: bytes) -> None:
    """A client sending a byte every 0.4 s: a socket timeout restarts with each byte (it kept its thread for ever);
    the request deadline does not, so the server answers 408 and closes while the client is still dripping."""
    answer = drip(server.port, start, 0.4, int(5 * DEADLINE_S / 0.4))  # up to 5 deadlines of dripping
    assert answer.startswith(b"HTTP/1.0 408 "), answer[:200]
    assert f"not complete within {DEADLINE_S:g} s".encode() in answer


def test_a_silent_connection_is_closed_at_the_deadline_without_an_answer(server: HttpServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5 * DEADLINE_S) as client:
        assert read_all(client) == b""  # EOF well before the client's own timeout


def test_past_the_cap_and_its_reserve_connections_are_closed_but_the_listener_recovers() -> None:
    listener = serve(max_connections=1)
    clients = [socket.create_connection(("127.0.0.1", listener.port), timeout=10) for _ in range(1 + 16)]
    try:
        # Closed unread (each reserve slot holds a thread too); a reserve slot would have answered 503.
        assert exchange(listener.port, head(GET)) == b""
    finally:
        for client in clients:
            client.close()
        with httpx.Client(timeout=5) as http:
            poll(lambda: _serves(http, f"{listener.url}/metrics"), bool, 15, "a scrape answered")
        listener.stop()


def _serves(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_header_without_a_colon_never_logs_in() -> None:
    """With an empty configured password, `Basic base64("ops")` once logged in."""
    listener = serve(login=BasicAuth("ops", ""))
    try:
        for value in (base64.b64encode(b"ops").decode(), "!!"):
            answer = httpx.delete(
                f"{listener.url}/v3/kafka/c/consumer/g", headers={"Authorization": f"Basic {value}"}, timeout=5
            )
            assert answer.status_code == 401, value
    finally:
        listener.stop()
