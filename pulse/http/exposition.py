"""/metrics for every listener, rendered as client_python's own server does (`_bake_output`): the format chosen
from `Accept` by `choose_encoder` (OpenMetrics when asked), `name[]` restricting the families, gzip when accepted."""

from __future__ import annotations

import gzip

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from pulse.http.router import Request, Response, Route


def metrics_response(registry: CollectorRegistry, request: Request) -> Response:
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    names = request.query.get("name[]")
    output = encoder(registry.restricted_registry(names) if names else registry)
    if gzip_accepted(request.headers.get("accept-encoding", "")):
        return Response(200, gzip.compress(output), content_type, (("Content-Encoding", "gzip"),))
    return Response(200, output, content_type)


def metrics_routes(registry: CollectorRegistry) -> list[Route]:
    """GET /metrics over `registry`."""
    return [Route("GET", "/metrics", lambda request: metrics_response(registry, request))]
