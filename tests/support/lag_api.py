"""The Burrow v3 routes of one `LagService` on a listener of their own, as `kafka-pulse lag` mounts them, for tests
that feed a service directly (no config, no sources of the command)."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from lag.serve.burrow_json import BurrowModules
from lag.serve.routes import BurrowApi, invalid_request
from lag.store.access import LagReader
from pulse.http import BasicAuth, HttpApp, HttpServer, Router, ServerTls, health_routes, metrics_routes


def serve_lag_api(
    service: LagReader,
    registry: CollectorRegistry | None = None,
    tls: ServerTls | None = None,
    login: BasicAuth | None = None,
    logger: logging.Logger | None = None,
    allow_unauthenticated_writes: bool = False,
    modules: BurrowModules | None = None,
) -> HttpServer:
    """Started on 127.0.0.1 and a port of the kernel's choice; the caller stops it. Without `login`, DELETE and
    POST answer 403 unless `allow_unauthenticated_writes`, as `http:` configures a listener."""
    routes = [*(metrics_routes(registry) if registry is not None else []), *health_routes(lambda: service.ready)]
    router = Router([*routes, *BurrowApi(service, modules, logger).routes()], invalid_request)
    return HttpServer(HttpApp(router, login, allow_unauthenticated_writes), "127.0.0.1", 0, tls).start()
