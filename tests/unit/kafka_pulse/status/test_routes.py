"""The status page's routes on the one HTTP stack, without a socket: the page and its assets come from the
package, every asset the page names exists, `/api/status` is JSON (non-finite figures as null), and the login of
the listener guards them all."""

from __future__ import annotations

import base64
import json
import math
import re
from typing import Any

import pytest

from kafka_pulse.status.routes import encode_document, load_assets, status_routes
from pulse.http import BasicAuth, HttpApp, Request, Router

LOGIN = BasicAuth("sre", "s3cret-status")


def app(document: dict[str, Any] | None = None) -> HttpApp:
    doc = document if document is not None else {"schema": "kafka-pulse-status/1", "status": "OK"}
    return HttpApp(Router(status_routes(lambda: encode_document(doc), load_assets())), LOGIN)


def get(path: str, login: BasicAuth | None = LOGIN, document: dict[str, Any] | None = None) -> Any:
    headers = {}
    if login is not None:
        token = base64.b64encode(f"{login.username}:{login.password}".encode()).decode()
        headers["authorization"] = f"Basic {token}"
    return app(document).handle(Request("GET", path, headers=headers))


def test_the_page_and_every_asset_it_names_are_served_from_the_package() -> None:
    page = get("/")
    assert page.status == 200 and page.content_type.startswith("text/html")
    named = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.body.decode())
    assert sorted(named) == ["/static/favicon.svg", "/static/status.css", "/static/status.js"]
    for path in named:
        answer = get(path)
        assert answer.status == 200 and answer.body, path
    assert get("/static/status.js").content_type.startswith("text/javascript")
    assert get("/favicon.ico").content_type == "image/svg+xml"


def test_nothing_is_loaded_from_elsewhere() -> None:
    """Offline: no URL with a host in the page or its assets, and a policy that allows only this listener."""
    for name, (body, _) in load_assets().items():
        hosts = re.findall(rb"https?://[^\s\"')]+", body)
        assert all(h.startswith(b"http://www.w3.org/") for h in hosts), (name, hosts)
    policy = dict(get("/").headers)["Content-Security-Policy"]
    assert policy.startswith("default-src 'self'")


def test_unknown_asset_is_404() -> None:
    assert get("/static/../routes.py").status == 404
    assert get("/static/nope.js").status == 404


@pytest.mark.parametrize("path", ["/", "/static/status.js", "/api/status"])
def test_every_route_needs_the_listeners_login(path: str) -> None:
    assert get(path, login=None).status == 401
    assert get(path, login=BasicAuth("sre", "wrong")).status == 401


def test_api_status_is_json_with_non_finite_figures_as_null() -> None:
    answer = get("/api/status", document={"status": "WARN", "burn": [math.inf, 1.5], "x": {"y": math.nan}})
    assert answer.status == 200 and answer.content_type == "application/json"
    assert dict(answer.headers)["Cache-Control"] == "no-store"
    assert json.loads(answer.body) == {"status": "WARN", "burn": [None, 1.5], "x": {"y": None}}
