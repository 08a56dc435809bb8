"""kafka-pulse's one HTTP listener: a prometheus-client registry at /metrics plus extra routes (the lag API), behind
optional basic auth and TLS, as `http:` in the config describes it. Commands build it; components only hand it a
registry or routes.

Serving only: rendering stays with prometheus-client (`choose_encoder`) and with each route. Every request, whatever
its path, is refused with 401 without the configured login; TLS handshakes run on the request's own thread, so a
slow or broken client never holds up the accept loop.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hmac
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from pulse.config import HttpConfig, split_host_port
from pulse.errors import ConfigError

_LOG = logging.getLogger(__name__)
REQUEST_TIMEOUT_S = 30.0
"""A client that neither completes its TLS handshake nor sends its request within this is dropped."""
REALM = "kafka-pulse"


@dataclass(frozen=True)
class Request:
    """What a route sees of a GET request."""

    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    """Header names lower-cased."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


Route = Callable[[Request], Response]
"""A handler for every path under its prefix (the longest matching prefix wins)."""


@dataclass(frozen=True)
class BasicAuth:
    username: str
    password: str


class HttpApp:
    """The listener's behaviour without sockets: login check, routing, /metrics rendering (unit-testable)."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        routes: Mapping[str, Route] | None = None,
        basic_auth: BasicAuth | None = None,
    ) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        if registry is not None:
            self.routes.setdefault("/metrics", _metrics_route(registry))
        self.basic_auth = basic_auth

    def handle(self, request: Request) -> Response:
        if self.basic_auth is not None and not is_authorized(request.headers.get("authorization", ""), self.basic_auth):
            challenge = (("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"'),)
            return Response(
                401, b"401 Unauthorized: this listener needs the login of http.basic_auth\n", headers=challenge
            )
        route = self._route_for(request.path)
        if route is None:
            return Response(404, f"404 Not Found: {request.path}\n".encode())
        return route(request)

    def _route_for(self, path: str) -> Route | None:
        matches = [p for p in self.routes if path == p or path.startswith(p.rstrip("/") + "/")]
        return self.routes[max(matches, key=len)] if matches else None


def is_authorized(header: str, login: BasicAuth) -> bool:
    """Does an `Authorization` header carry exactly this basic-auth login?"""
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        username, sep, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    # Both compared in constant time, and both always compared, so timing tells nothing about either.
    user_ok = hmac.compare_digest(username.encode(), login.username.encode())
    password_ok = hmac.compare_digest(password.encode(), login.password.encode())
    return bool(sep) and user_ok and password_ok


def _metrics_route(registry: CollectorRegistry) -> Route:
    def metrics(request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        body = encoder(registry)
        if "gzip" in request.headers.get("accept-encoding", ""):
            return Response(200, gzip.compress(body), content_type, (("Content-Encoding", "gzip"),))
        return Response(200, body, content_type)

    return metrics


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT_S
    server_version = "kafka-pulse"

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            response = self.server.app.handle(Request(parts.path, parse_qs(parts.query), headers))
        except Exception:  # a failing route answers 500 and the listener goes on
            _LOG.exception("HTTP %s failed", parts.path)
            response = Response(500, b"500 Internal Server Error\n")
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        _LOG.debug("%s " + format, self.address_string(), *args)


class TlsThreadingServer(ThreadingHTTPServer):
    """A threading HTTP server whose TLS handshake runs on each request's own thread (wrapping the listening socket
    would run it in accept(), where one silent client stalls every other), and which drops clients that hang up."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None
    ) -> None:
        self.context = context
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(REQUEST_TIMEOUT_S)
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


def server_tls_context(cert: Path, key: Path, where: str) -> ssl.SSLContext:
    """A TLS 1.2+ server context; ConfigError naming `where` (the config key) when the files do not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert), str(key))
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"{where}: cannot load certificate {cert} with key {key}: {exc}") from exc
    return context


class _Server(TlsThreadingServer):
    def __init__(self, address: tuple[str, int], app: HttpApp, context: ssl.SSLContext | None) -> None:
        self.app = app
        super().__init__(address, _Handler, context)


class HttpServer:
    """Serves an `HttpApp` on a thread; `start` binds, `stop` shuts the listener down."""

    def __init__(self, host: str, port: int, app: HttpApp, tls: tuple[Path, Path] | None = None) -> None:
        """`tls` is (certificate chain, private key), both PEM."""
        self.host = host
        self.app = app
        self._requested_port = port
        self._tls = tls
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_config(
        cls, config: HttpConfig, registry: CollectorRegistry | None = None, routes: Mapping[str, Route] | None = None
    ) -> HttpServer:
        host, port = split_host_port(config.listen)
        auth = config.basic_auth
        login = BasicAuth(auth.username, auth.password.get_secret_value()) if auth is not None else None
        tls = (config.tls.cert_file, config.tls.key_file) if config.tls is not None else None
        return cls(host, port, HttpApp(registry, routes, login), tls)

    @property
    def port(self) -> int:
        """The bound port (the requested one, or the kernel's choice for 0) once started."""
        return self._server.server_address[1] if self._server is not None else self._requested_port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}"

    def start(self) -> HttpServer:
        """Bind and serve; ConfigError when the certificate cannot be loaded or the address not bound."""
        context = server_tls_context(*self._tls, "http.tls") if self._tls is not None else None
        try:
            self._server = _Server((self.host, self._requested_port), self.app, context)
        except OSError as exc:
            where = f"{self.host}:{self._requested_port}"
            raise ConfigError(f"http.listen: cannot listen on {where}: {exc.strerror or exc}") from exc
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-listener", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
