"""The status page's routes on the one listener (pulse.http, so its login and TLS apply): `/` the page,
`/static/{name}` its assets from the package (no CDN: the page works offline), `/api/status` the JSON it reads,
serialised once per board refresh (`encode_document`): a request only sends those bytes, or 304 on its ETag."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pulse.http import Request, Response, Route

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
_SECURITY = (
    # Everything the page loads comes from this listener; inline SVG is built through the DOM, never as markup.
    ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
)
_NO_STORE = (("Cache-Control", "no-store"),)


@dataclass(frozen=True)
class EncodedDocument:
    """One `/api/status` body as sent, and its entity tag."""

    body: bytes
    etag: str
    """A strong validator of `body` (quoted, as the header carries it)."""


def encode_document(document: Mapping[str, Any]) -> EncodedDocument:
    """The document as compact JSON (non-finite figures as null) with its ETag: done once per refresh."""
    body = json.dumps(_finite(document), separators=(",", ":"), allow_nan=False).encode()
    return EncodedDocument(body, '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"')


def load_assets() -> dict[str, tuple[bytes, str]]:
    """Name -> (bytes, content type) of every file in kafka_pulse/status/static/, read once at assembly."""
    folder = resources.files("kafka_pulse.status") / "static"
    out: dict[str, tuple[bytes, str]] = {}
    for entry in folder.iterdir():
        suffix = entry.name[entry.name.rfind(".") :]
        if entry.is_file() and suffix in _TYPES:
            out[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return out


def status_routes(document: Callable[[], EncodedDocument], assets: Mapping[str, tuple[bytes, str]]) -> list[Route]:
    """`document` gives the current `/api/status` body (the board's, encoded at its last refresh)."""

    def page(_: Request) -> Response:
        body, kind = assets["index.html"]
        return Response(200, body, kind, (*_SECURITY, *_NO_STORE))

    def asset(request: Request) -> Response:
        found = assets.get(request.params["name"])
        if found is None:
            return Response(404, f"404 Not Found: {request.path}\n".encode())
        return Response(200, found[0], found[1], (*_SECURITY, ("Cache-Control", "no-cache")))

    def api(request: Request) -> Response:
        current = document()
        headers = (*_NO_STORE, ("ETag", current.etag))
        if _matches(request.headers.get("if-none-match", ""), current.etag):
            return Response(304, b"", "application/json", headers)
        return Response(200, current.body, "application/json", headers)

    def icon(_: Request) -> Response:
        body, kind = assets["favicon.svg"]
        return Response(200, body, kind, _SECURITY)

    return [
        Route("GET", "/", page),
        Route("GET", "/static/{name}", asset),
        Route("GET", "/favicon.ico", icon),
        Route("GET", "/api/status", api),
    ]


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such a figure (an infinite burn rate) is sent as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _matches(if_none_match: str, etag: str) -> bool:
    """If-None-Match names `etag` or `*` (weak tags compare as strong: RFC 9110's weak comparison for GET)."""
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return etag in tags or "*" in tags
