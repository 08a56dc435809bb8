"""The Burrow v3 HTTP API over a `LagService` (stdlib `http.server`; bodies from `burrow_json.py`).

Routes are Burrow's (research §1.7), so tools written for Burrow work unchanged: `/burrow/admin`,
`/burrow/admin/ready`, `/v3/kafka`, `/v3/kafka/{cluster}`, `.../topic`, `.../topic/{topic}`,
`.../topic/{topic}/consumers`, `.../consumer`, `.../consumer/{group}`, `.../status`, `.../lag`, DELETE of a group
or of a group's topic, and `/metrics` when a registry is given. Binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from lag.burrow_json import Json, commit_json, envelope, group_status_json
from lag.service import LagService
from lag.status import CommitPoint, Status
from lag.window import NO_LAG


class BurrowApi:
    """Serves the v3 API in a background thread; `stop()` shuts it down."""

    def __init__(
        self, service: LagService, host: str = "127.0.0.1", port: int = 0, registry: CollectorRegistry | None = None
    ) -> None:
        self.service = service
        self.registry = registry
        self.hostname = socket.gethostname()
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="lag-api", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # -- routing (pure apart from reading the service) -------------------------------------------------------------

    def handle(self, method: str, path: str) -> tuple[int, Json | str]:
        parts = [p for p in path.split("?")[0].split("/") if p]
        svc, mode = self.service, self.service.settings.mode

        def ok(message: str, **payload: Any) -> tuple[int, Json]:
            return 200, envelope(message, path, self.hostname, **payload)

        def missing(message: str) -> tuple[int, Json]:
            return 404, envelope(message, path, self.hostname, error=True)

        if parts == ["burrow", "admin"]:
            return 200, "GOOD"
        if parts == ["burrow", "admin", "ready"]:
            return 200, "READY"
        if parts[:2] != ["v3", "kafka"]:
            return missing("invalid request type")
        rest = parts[2:]
        clusters = svc.clusters()
        if not rest:
            return ok("cluster list returned", clusters=clusters)
        cluster = rest[0]
        if cluster not in clusters:
            return missing("cluster not found")
        with svc.locked() as store:
            now = svc.clock_ms()
            if len(rest) == 1:
                return ok("cluster module detail returned", module=svc.cluster_info.get(cluster, {}))
            if rest[1] == "topic":
                topics = store.hwms.topics(cluster)
                if len(rest) == 2:
                    return ok("topic list returned", topics=topics)
                topic = rest[2]
                if topic not in topics:
                    return missing("topic not found")
                if len(rest) == 3:
                    n = store.hwms.partition_count(cluster, topic)
                    offsets = [store.hwms.latest(cluster, topic, p) or 0 for p in range(n)]
                    return ok("topic offsets returned", offsets=offsets)
                if rest[3:] == ["consumers"]:
                    return ok("consumers of topic returned", consumers=store.consumers_of(cluster, topic))
                return missing("invalid request type")
            if rest[1] != "consumer":
                return missing("invalid request type")
            if len(rest) == 2:
                return ok("consumer list returned", consumers=store.groups(cluster))
            group = rest[2]
            if method == "DELETE":
                done = (
                    store.delete_group(cluster, group)
                    if len(rest) == 3
                    else store.delete_group_topic(cluster, group, rest[4])
                    if len(rest) == 5 and rest[3] == "topic"
                    else False
                )
                return ok("consumer group removed") if done else missing("consumer group not found")
            if len(rest) == 4 and rest[3] in ("status", "lag"):
                status = svc.evaluator.evaluate_group(cluster, group, now)
                if status.status is Status.NOTFOUND:
                    return missing("cluster or consumer not found")
                body = group_status_json(status, mode, show_all=rest[3] == "lag")
                return ok("consumer status returned", status=body)
            if len(rest) == 3:
                if not store.has_group(cluster, group, now):
                    return missing("cluster or consumer not found")
                return ok("consumer detail returned", topics=self._detail(cluster, group))
        return missing("invalid request type")

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


class _Handler(BaseHTTPRequestHandler):
    api: BurrowApi

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/metrics" and self.api.registry is not None:
            self._send(200, generate_latest(self.api.registry), CONTENT_TYPE_LATEST)
            return
        self._answer("GET")

    def do_DELETE(self) -> None:
        self._answer("DELETE")

    def _answer(self, method: str) -> None:
        code, body = self.api.handle(method, self.path)
        if isinstance(body, str):
            self._send(code, body.encode(), "text/plain")
        else:
            self._send(code, json.dumps(body).encode(), "application/json")

    def _send(self, code: int, data: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: access logs are not wanted on stderr for every scrape."""
