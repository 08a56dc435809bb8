"""Who may talk to a listener at all, and which requests may change state: the `Host` must name this listener
(421 otherwise, so a DNS-rebound name reads nothing), and a write must be JSON (415) and not come from another
site's page (403), so a browser holding the Basic login cannot be made to change the log level. Pure: the rules are
tested without a socket; `HttpApp` applies them (the Host check before the login check). docs/security.md,
"Host, Origin and Content-Type on every listener"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from pulse.http.router import Request, Response

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
"""Host names a request may use with any port: only this machine can reach a listener through them, and a
browser's page that can name them is this machine's own."""
REFUSED_FETCH_SITES = frozenset({"cross-site", "same-site"})
"""`Sec-Fetch-Site` values refused on writes. `same-site` too: a site ignores ports, so Grafana or Prometheus on
another port of this host is `same-site`, and their pages must not write here either."""
JSON = "application/json"


@dataclass(frozen=True)
class HostAddress:
    """A `Host` value split: `host` lower-case (IPv6 in brackets), `port` None when the value has none."""

    host: str
    port: int | None

    @classmethod
    def parse(cls, value: str) -> HostAddress | None:
        """None when `value` is not `host[:port]` (a path, a userinfo, a bad port)."""
        value = value.strip().lower()
        if not value or any(c in value for c in "/@?#\\ \t"):
            return None
        if value.startswith("["):
            host, bracket, rest = value.partition("]")
            host += bracket
            if not bracket or (rest and not rest.startswith(":")):
                return None
            port_text = rest[1:] if rest else None
        elif value.count(":") > 1:
            return None  # a bare IPv6 address: a Host must bracket it
        else:
            host, colon, port_text_or_empty = value.partition(":")
            port_text = port_text_or_empty if colon else None
        if not host or host == "[]":
            return None
        if port_text is None:
            return cls(host, None)
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
            return None
        return cls(host, int(port_text))


def host_form(host: str, port: int) -> str:
    """A socket address (an IPv6 host without brackets, as the socket gives it) as a `Host` names it."""
    host = host.lower().split("%", 1)[0]  # no zone id: a browser never sends one
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def host_problem(value: str | None, own: Iterable[HostAddress], allowed_hosts: Sequence[str], tls: bool) -> str | None:
    """Why `Host: value` does not name this listener, or None when it does. Accepted: no `Host` at all (HTTP/1.0
    tools; a browser always sends one), one of `own` (the bound address and the address the connection came in on;
    without a port when the port is the scheme's default), a loopback name with any port, or an
    `http.allowed_hosts` entry (a name alone allows any port; `name:port` that port only)."""
    if value is None:
        return None
    parsed = HostAddress.parse(value)
    if parsed is None:
        return f"Host {value!r} is not host[:port]"
    if parsed.host in LOOPBACK_NAMES:
        return None
    default_port = 443 if tls else 80
    for address in own:
        if parsed.host == address.host and (parsed.port or default_port) == address.port:
            return None
    for entry in allowed_hosts:
        allowed = HostAddress.parse(entry)
        if allowed is not None and allowed.host == parsed.host and allowed.port in (None, parsed.port):
            return None
    return f"Host {value!r} is not this listener's address; add it to http.allowed_hosts to serve it"


def cross_site_problem(headers: Mapping[str, str], tls: bool) -> str | None:
    """Why a write looks sent by another site's page, or None. `Origin` must be this listener's own origin
    (`scheme://Host`); `Sec-Fetch-Site` must not be `cross-site` or `same-site`. curl sends neither."""
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site in REFUSED_FETCH_SITES:
        return f"Sec-Fetch-Site is {site!r}: another site's page cannot change state here"
    origin = headers.get("origin")
    if origin is None:
        return None
    scheme, default_port = ("https", 443) if tls else ("http", 80)
    host = HostAddress.parse(headers.get("host", ""))
    try:
        parts = urlsplit(origin.strip().lower())
    except ValueError:
        parts = None
    claimed = HostAddress.parse(parts.netloc) if parts is not None and not parts.path else None
    if (
        parts is None
        or claimed is None
        or host is None
        or parts.scheme != scheme
        or (claimed.host, claimed.port or default_port) != (host.host, host.port or default_port)
    ):
        return f"Origin {origin!r} is not this listener's origin: another site's page cannot change state here"
    return None


def content_type_problem(request: Request) -> str | None:
    """Why a write's body is not JSON, or None. A write without a body (Burrow's DELETE of a group) needs none;
    one with a body must say `Content-Type: application/json`, which no HTML form and no simple cross-site fetch
    can send without the browser asking first (a CORS preflight this listener never grants)."""
    if not request.body:
        return None
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type == JSON:
        return None
    shown = media_type or "none"
    return f"a request body must be JSON (Content-Type: application/json), not {shown}"


def host_refusal(request: Request, allowed_hosts: Sequence[str]) -> Response | None:
    """421 when the request's `Host` does not name this listener (`request.own_hosts`), else None."""
    own = [a for a in (HostAddress.parse(h) for h in request.own_hosts) if a is not None and a.port is not None]
    problem = host_problem(request.headers.get("host"), own, allowed_hosts, request.tls)
    return None if problem is None else Response(421, f"421 Misdirected Request: {problem}\n".encode())


def write_refusal(request: Request) -> Response | None:
    """403 for a write from another site's page, 415 for a write whose body is not JSON, else None; for
    requests that can change state (not GET or HEAD)."""
    problem = cross_site_problem(request.headers, request.tls)
    if problem is not None:
        return Response(403, f"403 Forbidden: {problem}\n".encode())
    problem = content_type_problem(request)
    if problem is not None:
        return Response(415, f"415 Unsupported Media Type: {problem}\n".encode())
    return None
