"""The Burrow v3 HTTP API over a `LagService` (stdlib `http.server`; bodies from `burrow_json.py`).

Every route of research §1.7, so tools written for Burrow work unchanged: `/burrow/admin`, `/burrow/admin/ready`,
`/metrics` (when a registry is given), `/v3/kafka`, `/v3/kafka/{cluster}`, `.../topic`, `.../topic/{topic}`,
`.../topic/{topic}/consumers`, `.../consumer`, `.../consumer/{group}`, `.../status`, `.../lag`, DELETE of a group
or of a group's topic, `/v3/config`, `/v3/config/{storage,evaluator,cluster,consumer,notifier}[/{name}]` and
GET/POST `/v3/admin/loglevel`. Messages, status codes and error bodies are those Debian Burrow 1.2.1 answers with
(read from the running binary). Binds 127.0.0.1 unless told otherwise; optional TLS and basic auth.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from lag.burrow_json import (
    BURROW_LOG_LEVELS,
    Json,
    commit_json,
    envelope,
    evaluator_module_json,
    group_status_json,
    main_config_json,
    storage_module_json,
)
from lag.service import LagService
from lag.status import CommitPoint, Status
from lag.window import NO_LAG
from pulse.http_server import REQUEST_TIMEOUT_S, TlsThreadingServer, server_tls_context

_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"
_INVALID = json.dumps({"error": True, "message": "invalid request type", "result": {}})
"""Burrow's answer to an unknown route: 404, this body, served as text/plain."""
_COORDINATORS = ("storage", "evaluator", "cluster", "consumer", "notifier")
_TO_PYTHON_LEVEL = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "panic": logging.CRITICAL,
    "fatal": logging.CRITICAL,
}


@dataclass(frozen=True, slots=True)
class Response:
    code: int
    body: bytes
    content_type: str


@dataclass(frozen=True, slots=True)
class BasicAuth:
    """Credentials every request must carry (HTTP basic auth); compared in constant time."""

    username: str
    password: str


class BurrowApi:
    """Serves the v3 API in a background thread; `stop()` shuts it down."""

    def __init__(
        self,
        service: LagService,
        host: str = "127.0.0.1",
        port: int = 0,
        registry: CollectorRegistry | None = None,
        tls: tuple[Path, Path] | None = None,
        basic_auth: BasicAuth | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.service = service
        self.registry = registry
        self.hostname = socket.gethostname()
        self.basic_auth = basic_auth
        self.logger = logger or logging.getLogger()
        """The logger whose level `/v3/admin/loglevel` reads and sets (the root logger by default)."""
        handler = type("Handler", (_Handler,), {"api": self})
        context = server_tls_context(*tls, "http.tls") if tls is not None else None
        self._server = TlsThreadingServer((host, port), handler, context)
        self.tls = tls is not None
        self._thread = threading.Thread(target=self._server.serve_forever, name="lag-api", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def url(self) -> str:
        return f"http{'s' if self.tls else ''}://{self.address}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket; also for an API that was never started."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    # -- routing (pure apart from reading the service) -------------------------------------------------------------

    def handle(self, method: str, path: str, body: bytes = b"") -> Response:
        url = path.split("?")[0]
        parts = [unquote(p) for p in url.split("/") if p]
        if parts == ["burrow", "admin"]:
            return Response(200, b"GOOD", _TEXT)
        if parts == ["burrow", "admin", "ready"]:
            return Response(200, b"READY", _TEXT) if self.service.ready else Response(503, b"STARTING", _TEXT)
        if parts[:1] != ["v3"] or len(parts) < 2:
            return _invalid()
        if parts[1] == "kafka" and method in ("GET", "DELETE"):
            return self._kafka(method, url, parts[2:])
        if parts[1] == "config" and method == "GET":
            return self._config(url, parts[2:])
        if parts[1:] == ["admin", "loglevel"]:
            return self._loglevel(method, url, body)
        return _invalid()

    def _json(self, code: int, message: str, url: str, error: bool = False, **payload: Any) -> Response:
        body = envelope(message, url, self.hostname, error=error, **payload)
        return Response(code, json.dumps(body).encode(), _JSON)

    def _kafka(self, method: str, url: str, rest: list[str]) -> Response:
        svc = self.service
        if not rest:
            return (
                _invalid()
                if method != "GET"
                else self._json(200, "cluster list returned", url, clusters=svc.clusters())
            )
        cluster = rest[0]
        if cluster not in svc.clusters():
            return self._json(404, "cluster module not found", url, error=True)
        with svc.locked() as store:
            now = svc.clock_ms()
            if method == "DELETE":
                if len(rest) == 3 and rest[1] == "consumer":
                    store.delete_group(cluster, rest[2])
                elif len(rest) == 5 and rest[1] == "consumer" and rest[3] == "topic":
                    store.delete_group_topic(cluster, rest[2], rest[4])
                else:
                    return _invalid()
                return self._json(200, "consumer group removed", url)  # Burrow answers so for unknown groups too
            if len(rest) == 1:
                return self._json(200, "cluster module detail returned", url, module=svc.cluster_info.get(cluster, {}))
            if rest[1] == "topic":
                topics = store.hwms.topics(cluster)
                if len(rest) == 2:
                    return self._json(200, "topic list returned", url, topics=topics)
                topic = rest[2]
                if topic not in topics:
                    return self._json(404, "cluster or topic not found", url, error=True)
                if len(rest) == 3:
                    n = store.hwms.partition_count(cluster, topic)
                    offsets = [store.hwms.latest(cluster, topic, p) or 0 for p in range(n)]
                    return self._json(200, "topic offsets returned", url, offsets=offsets)
                if rest[3:] == ["consumers"]:
                    consumers = store.consumers_of(cluster, topic)
                    return self._json(200, "consumers of topic returned", url, consumers=consumers)
                return _invalid()
            if rest[1] != "consumer":
                return _invalid()
            if len(rest) == 2:
                return self._json(200, "consumer list returned", url, consumers=store.groups(cluster))
            group = rest[2]
            if len(rest) == 4 and rest[3] in ("status", "lag"):
                status = svc.group_status(cluster, group, now)
                body = group_status_json(status, svc.settings.mode, show_all=rest[3] == "lag")
                if status.status is Status.NOTFOUND:
                    body["complete"] = 1  # what Burrow's NOTFOUND status carries
                    return self._json(404, "consumer status returned", url, status=body)
                return self._json(200, "consumer status returned", url, status=body)
            if len(rest) == 3:
                if not store.has_group(cluster, group, now):
                    return self._json(404, "cluster or consumer not found", url, error=True)
                return self._json(200, "consumer detail returned", url, topics=self._detail(cluster, group))
        return _invalid()

    def _detail(self, cluster: str, group: str) -> Json:
        store, mode = self.service.store, self.service.settings.mode
        out: dict[str, list[Json]] = {}
        for slot in store.slots(cluster, group):
            offsets, timestamps, lags = store.commits.read(slot.slot)
            window: list[Json | None] = [None] * (store.intervals - len(offsets))
            window += [
                commit_json(CommitPoint(o, t, None if lag == NO_LAG else lag), mode)
                for o, t, lag in zip(offsets, timestamps, lags, strict=True)
            ]
            hwm = store.hwms.latest(cluster, slot.topic, slot.partition)
            current = max(0, hwm - offsets[-1]) if offsets and hwm is not None else 0
            out.setdefault(slot.topic, []).append(
                {"offsets": window, "owner": slot.owner, "client_id": slot.client_id, "current-lag": current}
            )
        return out

    def _config(self, url: str, rest: list[str]) -> Response:
        svc, s = self.service, self.service.settings
        if not rest:
            sections = main_config_json(self.address, self.tls, self._level())
            sections |= svc.main_config
            return self._json(200, "main config returned", url, **sections)
        coordinator = rest[0]
        if coordinator not in _COORDINATORS or len(rest) > 2:
            return _invalid()
        modules: dict[str, Json] = {
            "storage": {"default": storage_module_json(s.mode, s.intervals, s.min_distance_s, s.effective_group_allow(),
                                                       s.expire_group_s)},
            "evaluator": {"default": evaluator_module_json(s.mode, s.allowed_lag, s.minimum_complete)},
            "cluster": svc.cluster_info,
            "consumer": svc.consumer_info,
            "notifier": svc.notifier_info,
        }[coordinator]  # fmt: skip
        if len(rest) == 1:
            return self._json(200, "module list returned", url, coordinator=coordinator, modules=sorted(modules))
        if rest[1] not in modules:
            return self._json(404, f"{coordinator} module not found", url, error=True)
        return self._json(200, f"{coordinator} module detail returned", url, module=modules[rest[1]])

    def _level(self) -> str:
        level = self.logger.getEffectiveLevel()
        if level <= logging.DEBUG:
            return "debug"
        return {logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}.get(level, "panic")

    def _loglevel(self, method: str, url: str, body: bytes) -> Response:
        if method == "GET":
            return self._json(200, "log level returned", url, level=self._level())
        if method != "POST":
            return _invalid()
        try:
            request = json.loads(body or b"null")
        except ValueError:
            return self._json(400, "could not decode request body", url, error=True)
        level = request.get("level") if isinstance(request, dict) else None
        if level not in BURROW_LOG_LEVELS:
            return self._json(404, "unknown log level", url, error=True)
        self.logger.setLevel(_TO_PYTHON_LEVEL[level])
        return self._json(200, "set log level", url)

    def authorised(self, header: str | None) -> bool:
        if self.basic_auth is None:
            return True
        if header is None or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        ok_user = hmac.compare_digest(user.encode(), self.basic_auth.username.encode())
        ok_password = hmac.compare_digest(password.encode(), self.basic_auth.password.encode())
        return ok_user and ok_password


def _invalid() -> Response:
    return Response(404, _INVALID.encode(), _TEXT)


class _Handler(BaseHTTPRequestHandler):
    api: BurrowApi
    timeout = REQUEST_TIMEOUT_S  # a client that connects and says nothing gives its thread back

    def do_GET(self) -> None:
        if not self._check_auth():
            return
        if self.path.split("?")[0] == "/metrics" and self.api.registry is not None:
            self._send(Response(200, generate_latest(self.api.registry), CONTENT_TYPE_LATEST))
            return
        self._send(self.api.handle("GET", self.path))

    def do_DELETE(self) -> None:
        if self._check_auth():
            self._send(self.api.handle("DELETE", self.path))

    def do_POST(self) -> None:
        if not self._check_auth():
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 1 << 16)) if length > 0 else b""
        self._send(self.api.handle("POST", self.path, body))

    def _check_auth(self) -> bool:
        if self.api.authorised(self.headers.get("Authorization")):
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="kafka-pulse"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def _send(self, response: Response) -> None:
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: access logs are not wanted on stderr for every scrape."""
