"""The one HTTP server of every kafka-pulse listener (`collect`, `canary`, `lag`, `run`): a thread per connection,
the TLS handshake on that thread (one silent client never holds up accept()), one deadline for a client to speak,
and a cap on open connections. It only serves: login check and routing are `HttpApp`'s, rendering the routes'.
"""

from __future__ import annotations

import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry

from pulse.config import HttpConfig, split_host_port
from pulse.errors import ConfigError
from pulse.http.auth import BasicAuth, is_authorized, unauthorized
from pulse.http.exposition import metrics_routes
from pulse.http.health import health_routes
from pulse.http.router import Handler, Request, Response, Route, Router
from pulse.http.tls import ServerTls

_LOG = logging.getLogger(__name__)
REQUEST_TIMEOUT_S = 30.0
"""A client that neither completes its TLS handshake nor sends its request within this is dropped."""
MAX_CONNECTIONS = 64
"""Connections served at once (each holds a thread); past it new connections are closed at once."""
MAX_BODY_BYTES = 1 << 16
"""Request bodies are small JSON documents (Burrow's log level); a larger one is refused with 413."""


class HttpApp:
    """The listener's behaviour without sockets: login check, then the router; a failing route answers 500."""

    def __init__(self, router: Router, login: BasicAuth | None = None) -> None:
        self.router = router
        self.login = login

    def handle(self, request: Request) -> Response:
        if self.login is not None and not is_authorized(request.headers.get("authorization", ""), self.login):
            return unauthorized()
        try:
            return self.router.handle(request)
        except Exception:  # a failing route answers 500 and the listener goes on
            _LOG.exception("HTTP %s %s failed", request.method, request.path)
            return Response(500, b"500 Internal Server Error\n")


class _Handler(BaseHTTPRequestHandler):
    """Turns one HTTP exchange into a `Request` for the app and writes its `Response` back."""

    server: _Listener
    timeout = REQUEST_TIMEOUT_S  # a client that connects and says nothing gives its thread back
    server_version = "kafka-pulse"

    def version_string(self) -> str:
        return self.server_version  # no Python version in `Server:`

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
        )
        self._send(self.server.app.handle(request))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def _read_body(self) -> bytes | None:
        """The request body; None when a 400 or 413 was answered instead."""
        declared = self.headers.get("Content-Length")
        if declared is None:
            return b""
        length = int(declared) if declared.strip().isdigit() else -1
        if length < 0:
            self.send_error(400, f"Content-Length {declared!r} is not a byte count")
        elif length > MAX_BODY_BYTES:
            self.send_error(413, f"bodies are limited to {MAX_BODY_BYTES} bytes")
        else:
            return self.rfile.read(length)
        return None

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the server itself answers (bad request line or headers, unsupported method) as plain text."""
        if self.request_version == "HTTP/0.9":  # a garbled request line: answer with a status line all the same
            self.request_version = "HTTP/1.0"
        short = self.responses.get(code, ("Error", ""))[0]
        self.close_connection = True
        self._send(Response(code, f"{code} {short}{': ' + message if message else ''}\n".encode()))

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":  # HEAD (answered 501) gets the headers only
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        _LOG.debug("%s " + format, self.address_string(), *args)


class _Listener(ThreadingHTTPServer):
    """stdlib's threading server with the TLS handshake moved from accept() to the connection's thread, and a cap
    on connections served at once."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], app: HttpApp, context: ssl.SSLContext | None, max_connections: int
    ) -> None:
        self.app = app
        self.context = context
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(max_connections)
        self._max_connections = max_connections
        self._warned_at = -60.0
        super().__init__(address, _Handler)
        host, port = self.server_address[:2]
        self.address = f"{host!s}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            if time.monotonic() - self._warned_at >= 60:
                self._warned_at = time.monotonic()
                _LOG.warning("HTTP %s: %d connections open, closing new ones", self.address, self._max_connections)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(REQUEST_TIMEOUT_S)
        if self.context is None:
            super().finish_request(request, client_address)
            return
        try:
            tls_socket = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:  # plain HTTP to the TLS port, an untrusting client, a timeout
            _LOG.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        try:
            super().finish_request(tls_socket, client_address)
        finally:
            tls_socket.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer (a scraper's timeout) is routine; anything else is logged with its traceback."""
        _LOG.log(
            logging.DEBUG if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError) else logging.ERROR,
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
    ) -> None:
        """`where` is the config key of the address, for the error when it cannot be bound."""
        self.app = app
        self.host = host
        self.tls = tls
        self._requested_port = port
        self._where = where
        self._max_connections = max_connections
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
        app = HttpApp(Router([*table, *routes], fallback), BasicAuth.from_config(config.basic_auth))
        return cls(app, host, port, ServerTls.from_config(config.tls), where)

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
            self._listener = _Listener((self.host, self._requested_port), self.app, context, self._max_connections)
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
