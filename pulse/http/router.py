"""Requests and responses as plain values, and the route table on (method, path pattern) that every listener
dispatches through: handlers are pure functions `Request -> Response`, so routes are tested without a socket."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Request:
    """What a handler sees of one HTTP request."""

    method: str
    """Upper case: GET, POST, DELETE..."""
    path: str
    """As sent (percent-encoded), without the query string."""
    query: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    """Header names lower-cased."""
    body: bytes = b""
    params: Mapping[str, str] = field(default_factory=dict)
    """The `{name}` segments of the matched pattern, percent-decoded; filled in by the router."""
    listener: str = ""
    """host:port of the listener that received the request (empty outside a server)."""
    tls: bool = False
    """Whether it arrived over TLS."""
    own_hosts: tuple[str, ...] = ()
    """The `host:port` forms naming this listener (bound address, address the connection came in on), which a
    `Host` header may use (pulse/http/guards.py); empty outside a server."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = ()
    """Extra headers; Content-Type and Content-Length are added by the server."""
    stream: Iterable[bytes] | None = None
    """The body in pieces, sent as they come (chunked) in place of `body`: a body too large to hold at once (a
    /metrics scrape of a million series); its first piece is best taken already, so a failure is still a 500."""


Handler = Callable[[Request], Response]


@dataclass(frozen=True)
class Route:
    """`handler` answers `method` on paths matching `pattern`: literal segments and `{name}` placeholders, each
    standing for one non-empty segment (`/v3/kafka/{cluster}/consumer`)."""

    method: str
    pattern: str
    handler: Handler

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(s for s in self.pattern.split("/") if s)


def not_found(request: Request) -> Response:
    return Response(404, f"404 Not Found: {request.path}\n".encode())


class Router:
    """Dispatches a request to the route whose method and pattern match; a literal segment beats a placeholder.
    Empty segments are ignored (`/v3/kafka/` is `/v3/kafka`). Unmatched requests go to `fallback`: by default 404,
    or 405 with `Allow` when the path exists under another method."""

    def __init__(self, routes: Iterable[Route] = (), fallback: Handler | None = None) -> None:
        self.routes: list[Route] = []
        self.fallback = fallback
        self.add(routes)

    def add(self, routes: Iterable[Route], fallback: Handler | None = None) -> None:
        """More routes (and a fallback in place of the current one), while the table is being assembled."""
        # Most specific first: literal segments sort before placeholders, position by position.
        self.routes = sorted([*self.routes, *routes], key=lambda r: [s.startswith("{") for s in r.segments])
        if fallback is not None:
            self.fallback = fallback

    def handle(self, request: Request) -> Response:
        parts = [unquote(p) for p in request.path.split("/") if p]
        allowed: list[str] = []
        for route in self.routes:
            params = _match(route.segments, parts)
            if params is None:
                continue
            if route.method == request.method:
                return route.handler(dataclasses.replace(request, params=params))
            allowed.append(route.method)
        if self.fallback is not None:
            return self.fallback(request)
        if allowed:
            return Response(405, b"405 Method Not Allowed\n", headers=(("Allow", ", ".join(sorted(allowed))),))
        return not_found(request)


def _match(pattern: tuple[str, ...], parts: list[str]) -> dict[str, str] | None:
    if len(pattern) != len(parts):
        return None
    params: dict[str, str] = {}
    for want, got in zip(pattern, parts, strict=True):
        if want.startswith("{") and want.endswith("}"):
            params[want[1:-1]] = got
        elif want != got:
            return None
    return params
