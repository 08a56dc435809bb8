"""The Burrow v3 HTTP API as a route table over a `LagReader`: pure handlers `Request -> Response` (bodies from
`burrow_json.py`), served by the one listener of pulse.http next to /metrics.

Every Burrow route, so tools written for Burrow work unchanged: `/burrow/admin`, `/burrow/admin/ready`,
`/v3/kafka`, `/v3/kafka/{cluster}`, `.../topic`, `.../topic/{topic}`, `.../topic/{topic}/consumers`,
`.../consumer`, `.../consumer/{group}`, `.../status`, `.../lag`, DELETE of a group or of a group's topic,
`/v3/config`, `/v3/config/{storage,evaluator,cluster,consumer,notifier}[/{name}]` and GET/POST
`/v3/admin/loglevel`. Messages, status codes and error bodies are those Debian Burrow 1.2.1 answers with (read from
the running binary); a request no route takes gets Burrow's "invalid request type" (`invalid_request`).

Unlike Burrow, the two routes that change state (the DELETEs and the log level POST) are not open to anyone who
reaches the port: pulse.http's `HttpApp` refuses every request but GET with 403 before routing, unless the listener
has `http.basic_auth` or `http.allow_unauthenticated_writes: true` (docs/security.md).
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Sequence
from typing import Any

from lag.protocol import CommitPoint, Status
from lag.serve.burrow_json import (
    BURROW_LOG_LEVELS,
    BurrowModules,
    Json,
    commit_json,
    envelope,
    evaluator_module_json,
    group_status_json,
    main_config_json,
    storage_module_json,
)
from lag.store.access import LagReader
from lag.store.offsets import OffsetStore
from lag.store.windows import NO_LAG
from pulse.http import Request, Response, Route

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


def invalid_request(request: Request) -> Response:
    """Burrow's catch-all for a method and path no route takes."""
    return Response(404, _INVALID.encode(), _TEXT)


class BurrowApi:
    """The v3 routes over one `LagReader`; `routes()` for a listener, with `invalid_request` as its fallback."""

    def __init__(
        self,
        service: LagReader,
        modules: BurrowModules | None = None,
        logger: logging.Logger | None = None,
        extensions: Sequence[Route] = (),
    ) -> None:
        """`modules`: the cluster, consumer and notifier modules `/v3/config` and `/v3/kafka/{cluster}` describe;
        `extensions`: our routes served beside Burrow's on paths Burrow does not have (the share-group routes)."""
        self.extensions = list(extensions)
        self.service = service
        self.modules = modules if modules is not None else BurrowModules()
        self.hostname = socket.gethostname()
        self.logger = logger or logging.getLogger()
        """The logger whose level `/v3/admin/loglevel` reads and sets (the root logger by default)."""

    def routes(self) -> list[Route]:
        kafka, config = "/v3/kafka/{cluster}", "/v3/config/{coordinator}"
        return [
            Route("GET", "/burrow/admin", lambda _: Response(200, b"GOOD", _TEXT)),
            Route("GET", "/burrow/admin/ready", self._ready),
            Route("GET", "/v3/kafka", self._clusters),
            Route("GET", kafka, self._cluster),
            Route("GET", f"{kafka}/topic", self._topics),
            Route("GET", f"{kafka}/topic/{{topic}}", self._topic),
            Route("GET", f"{kafka}/topic/{{topic}}/consumers", self._topic_consumers),
            Route("GET", f"{kafka}/consumer", self._groups),
            Route("GET", f"{kafka}/consumer/{{group}}", self._group),
            Route("GET", f"{kafka}/consumer/{{group}}/status", lambda r: self._status(r, show_all=False)),
            Route("GET", f"{kafka}/consumer/{{group}}/lag", lambda r: self._status(r, show_all=True)),
            Route("DELETE", f"{kafka}/consumer/{{group}}", self._delete),
            Route("DELETE", f"{kafka}/consumer/{{group}}/topic/{{topic}}", self._delete),
            Route("GET", "/v3/config", self._main_config),
            Route("GET", config, self._modules),
            Route("GET", f"{config}/{{name}}", self._modules),
            Route("GET", "/v3/admin/loglevel", self._get_level),
            Route("POST", "/v3/admin/loglevel", self._set_level),
            *self.extensions,
        ]

    def _json(self, request: Request, code: int, message: str, error: bool = False, **payload: Any) -> Response:
        body = envelope(message, request.path, self.hostname, error=error, **payload)
        return Response(code, json.dumps(body).encode(), _JSON)

    def _ready(self, request: Request) -> Response:
        return Response(200, b"READY", _TEXT) if self.service.ready else Response(503, b"STARTING", _TEXT)

    # -- /v3/kafka -------------------------------------------------------------------------------------------------

    def _clusters(self, request: Request) -> Response:
        return self._json(request, 200, "cluster list returned", clusters=self._cluster_names())

    def _unknown_cluster(self, request: Request) -> Response | None:
        if request.params["cluster"] in self._cluster_names():
            return None
        return self._json(request, 404, "cluster module not found", error=True)

    def _cluster(self, request: Request) -> Response:
        if refused := self._unknown_cluster(request):
            return refused
        module = self.modules.clusters.get(request.params["cluster"], {})
        return self._json(request, 200, "cluster module detail returned", module=module)

    def _topics(self, request: Request) -> Response:
        if refused := self._unknown_cluster(request):
            return refused
        with self.service.locked() as store:
            topics = store.hwms.topics(request.params["cluster"])
        return self._json(request, 200, "topic list returned", topics=topics)

    def _topic(self, request: Request) -> Response:
        cluster, topic = request.params["cluster"], request.params["topic"]
        if refused := self._unknown_cluster(request) or self._unknown_topic(request):
            return refused
        with self.service.locked() as store:
            n = store.hwms.partition_count(cluster, topic)
            offsets = [store.hwms.latest(cluster, topic, p) or 0 for p in range(n)]
        return self._json(request, 200, "topic offsets returned", offsets=offsets)

    def _topic_consumers(self, request: Request) -> Response:
        if refused := self._unknown_cluster(request) or self._unknown_topic(request):
            return refused
        with self.service.locked() as store:
            consumers = store.consumers_of(request.params["cluster"], request.params["topic"])
        return self._json(request, 200, "consumers of topic returned", consumers=consumers)

    def _unknown_topic(self, request: Request) -> Response | None:
        with self.service.locked() as store:
            if request.params["topic"] in store.hwms.topics(request.params["cluster"]):
                return None
        return self._json(request, 404, "cluster or topic not found", error=True)

    def _groups(self, request: Request) -> Response:
        if refused := self._unknown_cluster(request):
            return refused
        with self.service.locked() as store:
            groups = store.groups(request.params["cluster"])
        return self._json(request, 200, "consumer list returned", consumers=groups)

    def _group(self, request: Request) -> Response:
        if refused := self._unknown_cluster(request):
            return refused
        cluster, group = request.params["cluster"], request.params["group"]
        with self.service.locked() as store:
            if not store.has_group(cluster, group, self.service.clock_ms()):
                return self._json(request, 404, "cluster or consumer not found", error=True)
            return self._json(request, 200, "consumer detail returned", topics=self._detail(store, cluster, group))

    def _status(self, request: Request, show_all: bool) -> Response:
        """`.../status` (the partitions not OK) and `.../lag` (all of them)."""
        if refused := self._unknown_cluster(request):
            return refused
        svc = self.service
        status = svc.group_status(request.params["cluster"], request.params["group"], svc.clock_ms())
        body = group_status_json(status, svc.settings.mode, show_all=show_all)
        if status.status is Status.NOTFOUND:
            body["complete"] = 1  # what Burrow's NOTFOUND status carries
            return self._json(request, 404, "consumer status returned", status=body)
        return self._json(request, 200, "consumer status returned", status=body)

    def _delete(self, request: Request) -> Response:
        """A group, or a group's topic; Burrow answers "removed" for unknown groups too."""
        if refused := self._unknown_cluster(request):
            return refused
        cluster, group, topic = request.params["cluster"], request.params["group"], request.params.get("topic")
        with self.service.locked() as store:
            if topic is None:
                store.delete_group(cluster, group)
            else:
                store.delete_group_topic(cluster, group, topic)
        return self._json(request, 200, "consumer group removed")

    def _cluster_names(self) -> list[str]:
        """The clusters with data, and those configured before their first HWM (Burrow lists its modules)."""
        return sorted(set(self.service.clusters()) | set(self.modules.clusters))

    def _detail(self, store: OffsetStore, cluster: str, group: str) -> Json:
        mode = self.service.settings.mode
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

    # -- /v3/config and /v3/admin ----------------------------------------------------------------------------------

    def _main_config(self, request: Request) -> Response:
        sections = main_config_json(request.listener, request.tls, self._level())
        sections |= self.modules.main
        return self._json(request, 200, "main config returned", **sections)

    def _modules(self, request: Request) -> Response:
        s = self.service.settings
        coordinator, name = request.params["coordinator"], request.params.get("name")
        if coordinator not in _COORDINATORS:
            return invalid_request(request)
        modules: dict[str, Json] = {
            "storage": {
                "default": storage_module_json(
                    s.mode, s.intervals, s.min_distance_s, s.effective_group_allow(), s.expire_group_s
                )
            },
            "evaluator": {"default": evaluator_module_json(s.mode, s.allowed_lag, s.minimum_complete)},
            "cluster": dict(self.modules.clusters),
            "consumer": dict(self.modules.consumers),
            "notifier": dict(self.modules.notifiers),
        }[coordinator]
        if name is None:
            return self._json(request, 200, "module list returned", coordinator=coordinator, modules=sorted(modules))
        if name not in modules:
            return self._json(request, 404, f"{coordinator} module not found", error=True)
        return self._json(request, 200, f"{coordinator} module detail returned", module=modules[name])

    def _level(self) -> str:
        level = self.logger.getEffectiveLevel()
        if level <= logging.DEBUG:
            return "debug"
        return {logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}.get(level, "panic")

    def _get_level(self, request: Request) -> Response:
        return self._json(request, 200, "log level returned", level=self._level())

    def _set_level(self, request: Request) -> Response:
        try:
            body = json.loads(request.body or b"null")
        except ValueError:
            return self._json(request, 400, "could not decode request body", error=True)
        level = body.get("level") if isinstance(body, dict) else None
        if level not in BURROW_LOG_LEVELS:
            return self._json(request, 404, "unknown log level", error=True)
        self.logger.setLevel(_TO_PYTHON_LEVEL[level])
        return self._json(request, 200, "set log level")
