"""/metrics for every listener, rendered as client_python's own server does (`_bake_output`): the format chosen
from `Accept` by `choose_encoder` (OpenMetrics when asked), `name[]` restricting the families, gzip when accepted.

A collector whose families are too many to build as objects yields a `RenderedFamilies` instead: it is handed the
negotiated encoder and returns those families' text itself, written where its objects would have been."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from pulse.http.router import Request, Response, Route

GZIP_LEVEL = 1
"""Not client_python's 9: a scrape of a million lag series is 550 MB of text, which level 9 takes 9 s of CPU to
compress and level 1 about 1 s, for a body 1.5x as large (docs/benchmarks.md, lag scrape)."""
Encoder = Callable[[Collector], bytes]
"""client_python's renderer of one format (`generate_latest` or its OpenMetrics twin), as `choose_encoder` gives."""


class RenderedFamilies(Metric):
    """Families a collector writes itself, in the encoder's format and without OpenMetrics' `# EOF` trailer; only
    `metrics_response`/`encode` know it (client_python's own encoders would print it as an empty family)."""

    def __init__(self, render: Callable[[Encoder], bytes]) -> None:
        super().__init__("kafka_pulse_rendered_families", "Families rendered by their collector.", "unknown")
        self.render = render


class _Metrics:
    def __init__(self, metrics: Iterable[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return self.metrics


def encode_families(encoder: Encoder, metrics: Iterable[Metric]) -> bytes:
    """`metrics` in the encoder's format without the trailer an OpenMetrics body ends with."""
    trailer = encoder(_Metrics(()))
    return encoder(_Metrics(metrics)).removesuffix(trailer)


def encode(source: Collector, encoder: Encoder) -> bytes:
    """What `encoder(source)` gives, with each `RenderedFamilies` replaced by its own text."""
    chunks: list[bytes] = []
    batch: list[Metric] = []
    for metric in source.collect():
        if isinstance(metric, RenderedFamilies):
            chunks += (encode_families(encoder, batch), metric.render(encoder))
            batch = []
        else:
            batch.append(metric)
    chunks.append(encoder(_Metrics(batch)))
    return b"".join(chunks)


def metrics_response(registry: CollectorRegistry, request: Request) -> Response:
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    names = request.query.get("name[]")
    output = encode(registry.restricted_registry(names) if names else registry, encoder)
    if gzip_accepted(request.headers.get("accept-encoding", "")):
        return Response(200, gzip.compress(output, GZIP_LEVEL), content_type, (("Content-Encoding", "gzip"),))
    return Response(200, output, content_type)


def metrics_routes(registry: CollectorRegistry) -> list[Route]:
    """GET /metrics over `registry`."""
    return [Route("GET", "/metrics", lambda request: metrics_response(registry, request))]
