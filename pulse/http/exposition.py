"""/metrics for every listener, rendered as client_python's own server does (`_bake_output`): the format chosen
from `Accept` by `choose_encoder` (OpenMetrics when asked), `name[]` restricting the families, gzip when accepted.

A collector whose families are too many to build as objects yields a `RenderedFamilies` instead: it is handed the
negotiated encoder and returns those families' text itself (whole, or in pieces), written where its objects would
have been. A body past `STREAM_BYTES` is sent as those pieces come (chunked, gzip through one streaming compressor),
so a 550 MB scrape is never held, joined or encoded whole."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from pulse.http.router import Request, Response, Route

GZIP_LEVEL = 1
"""Not client_python's 9: a scrape of a million lag series is 550 MB of text, which level 9 takes 9 s of CPU to
compress and level 1 about 1 s, for a body 1.5x as large (docs/benchmarks.md, lag scrape)."""
STREAM_BYTES = 1 << 20
"""A body up to this is answered whole with its Content-Length, as before; a larger one is streamed."""
Encoder = Callable[[Collector], bytes]
"""client_python's renderer of one format (`generate_latest` or its OpenMetrics twin), as `choose_encoder` gives."""


class RenderedFamilies(Metric):
    """Families a collector writes itself, in the encoder's format and without OpenMetrics' `# EOF` trailer; only
    `metrics_response`/`encode` know it (client_python's own encoders would print it as an empty family)."""

    def __init__(self, render: Callable[[Encoder], bytes | Iterable[bytes]]) -> None:
        """`render` gives the text whole or as pieces, written in order (each piece best about `STREAM_BYTES`)."""
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


def encode_chunks(source: Collector, encoder: Encoder) -> Iterator[bytes]:
    """What `encoder(source)` gives, in pieces, with each `RenderedFamilies` replaced by its own text."""
    batch: list[Metric] = []
    for metric in source.collect():
        if isinstance(metric, RenderedFamilies):
            yield encode_families(encoder, batch)
            batch = []
            text = metric.render(encoder)
            if isinstance(text, bytes):
                yield text
            else:
                yield from text
        else:
            batch.append(metric)
    yield encoder(_Metrics(batch))


def encode(source: Collector, encoder: Encoder) -> bytes:
    """`encode_chunks` joined."""
    return b"".join(encode_chunks(source, encoder))


def gzip_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` as one gzip member, compressed as they come (`GZIP_LEVEL`)."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: gzip header and trailer
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()


def metrics_response(registry: CollectorRegistry, request: Request) -> Response:
    """The body whole while it is small; past `STREAM_BYTES`, a stream whose first pieces (the collectors' work up to
    there, a lag evaluation included) are taken here, so their failure is still the route's 500."""
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    names = request.query.get("name[]")
    chunks = encode_chunks(registry.restricted_registry(names) if names else registry, encoder)
    taken: list[bytes] = []
    size = 0
    for chunk in chunks:
        taken.append(chunk)
        size += len(chunk)
        if size > STREAM_BYTES:
            break
    else:
        return _whole(b"".join(taken), content_type, request)
    stream = _continued(taken, chunks)
    if gzip_accepted(request.headers.get("accept-encoding", "")):
        return Response(200, b"", content_type, (("Content-Encoding", "gzip"),), stream=gzip_chunks(stream))
    return Response(200, b"", content_type, stream=stream)


def _whole(output: bytes, content_type: str, request: Request) -> Response:
    if gzip_accepted(request.headers.get("accept-encoding", "")):
        return Response(200, gzip.compress(output, GZIP_LEVEL), content_type, (("Content-Encoding", "gzip"),))
    return Response(200, output, content_type)


def _continued(taken: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    """The pieces taken, released as they are sent, then the rest."""
    while taken:
        yield taken.pop(0)
    yield from rest


def metrics_routes(registry: CollectorRegistry) -> list[Route]:
    """GET /metrics over `registry`."""
    return [Route("GET", "/metrics", lambda request: metrics_response(registry, request))]
