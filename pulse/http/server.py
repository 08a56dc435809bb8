"""The one HTTP server of every kafka-pulse listener (`collect`, `canary`, `lag`, `run`): a thread per connection,
the TLS handshake on that thread (one silent client never holds up accept()), one deadline for the whole request
however slowly it drips in, a cap on open connections answered with 503, and 400 for a malformed request. It only
serves: login check and routing are `HttpApp`'s, rendering the routes'.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry

from pulse.config import HttpConfig, split_host_port
from pulse.errors import ConfigError
from pulse.http.auth import BasicAuth, is_authorized, unauthenticated_write, unauthorized
from pulse.http.exposition import metrics_routes
from pulse.http.guards import host_form, host_refusal, write_refusal
from pulse.http.health import health_routes
from pulse.http.limits import (
    BUSY_CONNECTIONS,
    BUSY_TIMEOUT_S,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT_S,
    DeadlineStream,
    head_problem,
)
from pulse.http.router import Handler, Request, Response, Route, Router
from pulse.http.tls import ServerTls

_LOG = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD"})
"""Methods that change nothing; any other needs `http.basic_auth` or `http.allow_unauthenticated_writes`."""


class HttpApp:
    """The listener's behaviour without sockets: the `Host` check (421), the login check, the refusal of
    unauthenticated writes, then of cross-site or non-JSON writes (403, 415; pulse/http/guards.py), then the
    router; a failing route answers 500."""

    def __init__(
        self,
        router: Router,
        login: BasicAuth | None = None,
        allow_unauthenticated_writes: bool = False,
        allowed_hosts: Sequence[str] = (),
    ):
        self.router = router
        self.login = login
        self.allow_unauthenticated_writes = allow_unauthenticated_writes
        self.allowed_hosts = tuple(allowed_hosts)

    def handle(self, request: Request) -> Response:
        refusal = host_refusal(request, self.allowed_hosts)
        if refusal is not None:
            return refusal
        if self.login is not None and not is_authorized(request.headers.get("authorization", ""), self.login):
            return unauthorized()
        if self.login is None and request.method not in SAFE_METHODS and not self.allow_unauthenticated_writes:
            return unauthenticated_write(request.method)
        refusal = None if request.method in SAFE_METHODS else write_refusal(request)
        if refusal is not None:
            return refusal
        try:
            return self.router.handle(request)
        except Exception:  # a failing route answers 500 and the listener goes on
            _LOG.exception("HTTP %s %s failed", request.method, request.path)
            return Response(500, b"500 Internal Server Error\n")


class _Handler(BaseHTTPRequestHandler):
    """Turns one HTTP exchange into a `Request` for the app and writes its `Response` back."""

    server: _Listener
    raw_requestline: bytes
    server_version = "kafka-pulse"
    # Before the request line is read, so a 400 or 408 can be answered at any point.
    command = ""
    requestline = ""
    request_version = "HTTP/1.0"
    answered = False

    def __init__(self, request: Any, client_address: Any, server: _Listener, deadline: float) -> None:
        self.deadline = deadline
        super().__init__(request, client_address, server)

    def setup(self) -> None:
        self.connection = self.request
        self.stream = DeadlineStream(self.connection, self.deadline)
        self.rfile = io.BufferedReader(self.stream)
        self.wfile = self.stream  # type: ignore[assignment]  # writes go through the same deadline

    def version_string(self) -> str:
        return self.server_version  # no Python version in `Server:`

    def handle_one_request(self) -> None:
        super().handle_one_request()  # a read past the deadline ends it (TimeoutError, caught there)
        if self.stream.expired and self.stream.received and not self.answered:
            self.send_error(408, f"the request was not complete within {self.server.request_timeout_s:g} s")

    def parse_request(self) -> bool:
        """The stdlib's checks (request line, header line length and count), then ours on the header section."""
        if not self.raw_requestline.strip():
            self.send_error(400, "empty request line")
            return False
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":
            self.send_error(400, "the request line names no HTTP version (METHOD /path HTTP/1.1)")
            return False
        problem = head_problem(self.headers)
        if problem is not None:
            self.send_error(*problem)
            return False
        return True

    def answer(self, request: Request) -> Response:
        return self.server.app.handle(request)

    def _dispatch(self) -> None:
        body = self._read_body()
        if body is None:
            return
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path or "/",
            query=parse_qs(parts.query),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            listener=self.server.address,
            tls=self.server.context is not None,
            own_hosts=(self.server.own_host, host_form(*self.connection.getsockname()[:2])),
        )
        self._send(self.answer(request))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def _read_body(self) -> bytes | None:
        """The request body (Content-Length was checked by `head_problem`); None when 413 was answered instead."""
        length = int(self.headers.get("Content-Length", "0"))
        if length > MAX_BODY_BYTES:
            self.send_error(413, f"bodies are limited to {MAX_BODY_BYTES} bytes")
            return None
        return self.rfile.read(length)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the server itself answers (bad request line or headers, unsupported method) as plain text."""
        if self.request_version == "HTTP/0.9":  # a garbled request line: answer with a status line all the same
            self.request_version = "HTTP/1.0"
        short = self.responses.get(code, ("Error", ""))[0]
        self.close_connection = True
        self._send(Response(code, f"{code} {short}{': ' + message if message else ''}\n".encode()))

    def _send(self, response: Response) -> None:
        self.answered = True
        self.stream.deadline = time.monotonic() + self.server.request_timeout_s  # the answer's own time
        pieces = response.stream
        if pieces is not None and (self.request_version == "HTTP/1.0" or self.command == "HEAD"):
            response, pieces = self._whole(response, pieces), None  # no chunked encoding in HTTP/1.0
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        if pieces is None:
            self.send_header("Content-Length", str(len(response.body)))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        for name, value in response.headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":  # HEAD (answered 501) gets the headers only
            return
        if pieces is None:
            self.wfile.write(response.body)
        else:
            self._write_chunked(pieces)

    def _whole(self, response: Response, pieces: Iterable[bytes]) -> Response:
        """A streamed response joined, for a client that cannot take it in chunks; 500 when making it fails."""
        try:
            return dataclasses.replace(response, body=b"".join(pieces), stream=None)
        except Exception:
            _LOG.exception("HTTP %s %s failed", self.command, self.path)
            return Response(500, b"500 Internal Server Error\n")

    def _write_chunked(self, pieces: Iterable[bytes]) -> None:
        """Each piece as one chunk, sent as it comes. A failure after the headers leaves the body without its last
        chunk and closes the connection, so the client sees an incomplete answer, never a short complete one."""
        iterator = iter(pieces)
        ending = b""  # the CRLF closing the previous chunk, sent with the next size line
        try:
            for piece in iterator:
                if piece:
                    self.wfile.write(b"%s%x\r\n" % (ending, len(piece)))
                    self.wfile.write(piece)
                    ending = b"\r\n"
        except OSError:
            raise  # the client went away: routine (`handle_error`)
        except Exception:
            _LOG.exception("HTTP %s %s failed after its headers were sent", self.command, self.path)
            self.close_connection = True
            return
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()  # a generator's resources (a scrape's arrays) go now, not at its collection
        self.wfile.write(ending + b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        _LOG.debug("%s " + format, self.address_string(), *args)


class _BusyHandler(_Handler):
    """For a connection past the cap: reads the request as any other, answers 503 whatever it asks."""

    def answer(self, request: Request) -> Response:
        text = f"503 Service Unavailable: {self.server.max_connections} connections are open, the most this listener"
        return Response(503, f"{text} serves at once; retry later\n".encode(), headers=(("Retry-After", "1"),))


class _Listener(HTTPServer):
    """stdlib's HTTP server with a thread per connection, the TLS handshake moved from accept() to that thread, and
    a cap on connections served at once."""

    request_queue_size = 128  # the kernel's accept backlog (stdlib's 5 drops a burst of scrapes' connections)

    def __init__(
        self,
        address: tuple[str, int],
        app: HttpApp,
        context: ssl.SSLContext | None,
        max_connections: int,
        request_timeout_s: float,
    ) -> None:
        self.app = app
        self.context = context
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.max_connections = max_connections
        self.request_timeout_s = request_timeout_s
        self._slots = threading.BoundedSemaphore(max_connections)
        self._busy_slots = threading.BoundedSemaphore(BUSY_CONNECTIONS)
        self._warned_at = -60.0
        super().__init__(address, _Handler)  # type: ignore[arg-type]  # `_handle` builds handlers, with a deadline
        host, port = self.server_address[:2]
        self.address = f"{host!s}:{port}"
        self.own_host = host_form(str(host), int(port))

    def process_request(self, request: Any, client_address: Any) -> None:
        """Runs on the accept thread: takes a slot (or a busy one) and hands the connection to a thread of its own."""
        slots: threading.BoundedSemaphore | None = None
        for candidate in (self._slots, self._busy_slots):
            if candidate.acquire(blocking=False):
                slots = candidate
                break
        busy = slots is not self._slots
        if busy and time.monotonic() - self._warned_at >= 60:
            self._warned_at = time.monotonic()
            _LOG.warning("HTTP %s: %d connections open, answering new ones 503", self.address, self.max_connections)
        if slots is None:
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._serve, args=(request, client_address, slots, busy), daemon=True)
        try:
            thread.start()
        except BaseException:
            slots.release()
            self.shutdown_request(request)
            raise

    def _serve(self, request: Any, client_address: Any, slots: threading.BoundedSemaphore, busy: bool) -> None:
        try:
            self._handle(request, client_address, busy)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            slots.release()

    def _handle(self, request: socket.socket, client_address: Any, busy: bool) -> None:
        """The handshake and the request under one deadline (the handshake's timeout is its total, Python 3.5+)."""
        timeout_s = BUSY_TIMEOUT_S if busy else self.request_timeout_s
        deadline = time.monotonic() + timeout_s
        request.settimeout(timeout_s)
        handler = _BusyHandler if busy else _Handler
        if self.context is None:
            handler(request, client_address, self, deadline)
            return
        try:
            tls_socket = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:  # plain HTTP to the TLS port, an untrusting client, a timeout
            _LOG.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        try:
            handler(tls_socket, client_address, self, deadline)
        finally:
            tls_socket.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer or a socket error is routine; anything else is logged with its traceback."""
        _LOG.log(
            logging.DEBUG if isinstance(sys.exc_info()[1], OSError) else logging.ERROR,
            "HTTP request from %s failed",
            client_address,
            exc_info=True,
        )


class HttpServer:
    """Serves an `HttpApp` on a thread of its own; the socket opens in `start` and closes in `stop`."""

    def __init__(
        self,
        app: HttpApp,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ServerTls | None = None,
        where: str = "http.listen",
        max_connections: int = MAX_CONNECTIONS,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        """`where` is the config key of the address, for the error when it cannot be bound."""
        self.app = app
        self.host = host
        self.tls = tls
        self._requested_port = port
        self._where = where
        self._max_connections = max_connections
        self._request_timeout_s = request_timeout_s
        self._listener: _Listener | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_config(
        cls,
        config: HttpConfig,
        registry: CollectorRegistry | None = None,
        routes: Iterable[Route] = (),
        fallback: Handler | None = None,
        ready: Callable[[], bool] | None = None,
        listen: str | None = None,
        where: str = "http.listen",
    ) -> HttpServer:
        """A listener as `http:` describes it (on `listen`, named `where`, when given): /metrics over `registry`,
        `/-/healthy` and `/-/ready` (what `ready` says; always ready when None), then `routes`; requests that
        match none go to `fallback`."""
        host, port = split_host_port(listen or config.listen)
        table = metrics_routes(registry) if registry is not None else []
        table += health_routes(ready or _always)
        login = BasicAuth.from_config(config.basic_auth)
        router = Router([*table, *routes], fallback)
        app = HttpApp(router, login, config.allow_unauthenticated_writes, config.allowed_hosts)
        tls = ServerTls.from_config(config.tls)
        return cls(app, host, port, tls, where, request_timeout_s=config.request_timeout_s)

    @property
    def port(self) -> int:
        """The bound port (the requested one, or the kernel's choice for 0) once started."""
        return self._listener.server_address[1] if self._listener is not None else self._requested_port

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}"

    def start(self) -> HttpServer:
        """Bind and serve; ConfigError when the certificate cannot be loaded or the address not bound."""
        context = self.tls.context() if self.tls is not None else None
        try:
            address = (self.host, self._requested_port)
            self._listener = _Listener(address, self.app, context, self._max_connections, self._request_timeout_s)
        except OSError as exc:
            where = f"{self.host}:{self._requested_port}"
            raise ConfigError(f"{self._where}: cannot listen on {where}: {exc.strerror or exc}") from exc
        self._thread = threading.Thread(target=self._listener.serve_forever, name="http-listener", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; also for a server never started."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.shutdown()
            listener.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None


def _always() -> bool:
    return True
