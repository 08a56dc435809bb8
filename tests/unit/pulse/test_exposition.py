"""pulse.http's /metrics exposition with a collector that writes its own text (`RenderedFamilies`): its text sits
where its objects would have been, between the other collectors', in every negotiated format, once gzipped."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric

from pulse.http import Request
from pulse.http.exposition import Encoder, RenderedFamilies, encode_families, metrics_response


class Families:
    """Yields its two families as objects, or as the same text through `RenderedFamilies`."""

    def __init__(self, rendered: bool) -> None:
        self.rendered = rendered

    def families(self) -> list[Metric]:
        a = GaugeMetricFamily("written_a", 'Help with "quotes" and \\ backslash.', labels=["group"])
        a.add_metric(['g"1\n'], 1234567.0)
        b = GaugeMetricFamily("written_b", "Second.", labels=["x", "a"])
        b.add_metric(["1", "2"], 0.5)
        return [a, b]

    def render(self, encoder: Encoder) -> bytes:
        return encode_families(encoder, self.families())

    def collect(self) -> Iterator[Metric]:
        if self.rendered:
            yield RenderedFamilies(self.render)
        else:
            yield from self.families()


def registry(rendered: bool) -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("before", "A counter first.", registry=reg).inc()
    reg.register(Families(rendered))
    Gauge("after", "A gauge last.", registry=reg).set(3)
    return reg


@pytest.mark.parametrize(
    "accept", ["", "application/openmetrics-text; version=1.0.0", "text/plain; version=1.0.0; escaping=underscores"]
)
def test_rendered_families_take_their_objects_place(accept: str) -> None:
    request = Request("GET", "/metrics", headers={"accept": accept})
    got, want = metrics_response(registry(True), request), metrics_response(registry(False), request)
    assert got.content_type == want.content_type
    body = got.body.decode()
    assert body.index("before") < body.index("written_a") < body.index("written_b") < body.index("# HELP after")
    assert body.count("# EOF") == (1 if "openmetrics" in accept else 0)
    # `_created` samples carry the time each counter was made: compare without them
    assert [ln for ln in got.body.splitlines() if b"_created" not in ln] == [
        ln for ln in want.body.splitlines() if b"_created" not in ln
    ]


def test_gzip_answers_the_same_text() -> None:
    plain = metrics_response(registry(True), Request("GET", "/metrics")).body
    zipped = metrics_response(registry(True), Request("GET", "/metrics", headers={"accept-encoding": "gzip"}))
    assert dict(zipped.headers)["Content-Encoding"] == "gzip"
    assert [ln for ln in gzip.decompress(zipped.body).splitlines() if b"_created" not in ln] == [
        ln for ln in plain.splitlines() if b"_created" not in ln
    ]
