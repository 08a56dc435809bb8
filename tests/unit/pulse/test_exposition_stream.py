"""A /metrics body past `STREAM_BYTES` is streamed by the one HTTP stack (chunked, gzip through one compressor): over
a real server on loopback its text is byte for byte the whole body `encode` gives, in every format, also to an
HTTP/1.0 client (which gets it whole, with its length); a failure before the first megabyte is still a 500, one
after it an answer the client sees as incomplete, and the listener goes on."""

from __future__ import annotations

import gzip
import socket
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric

from pulse.config import HttpConfig
from pulse.http import HttpServer
from pulse.http.exposition import STREAM_BYTES, Encoder, RenderedFamilies, encode
from pulse.ports import free_ports

LINES = 60_000
"""Sample lines of the written family: about 2.9 MB, past `STREAM_BYTES`."""


class Written:
    """A family written by its collector in pieces of 1,000 lines; `fail_at` raises when that piece is asked for."""

    def __init__(self, lines: int = LINES, fail_at: int | None = None) -> None:
        self.lines, self.fail_at = lines, fail_at

    def pieces(self, encoder: Encoder) -> Iterator[bytes]:
        yield b"# HELP written_big A family written in pieces.\n# TYPE written_big gauge\n"
        for start in range(0, self.lines, 1000):
            if start // 1000 == self.fail_at:
                raise RuntimeError("broken piece")
            stop = min(start + 1000, self.lines)
            yield "".join(f'written_big{{group="g-{i:07d}",topic="t"}} {i}.0\n' for i in range(start, stop)).encode()

    def collect(self) -> Iterator[Metric]:
        yield RenderedFamilies(self.pieces)


def registry(written: Written) -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("before", "A counter first.", registry=reg).inc()
    reg.register(written)
    Gauge("after", "A gauge last.", registry=reg).set(3)
    return reg


@pytest.fixture
def served() -> Iterator[tuple[HttpServer, CollectorRegistry]]:
    reg = registry(Written())
    (port,) = free_ports(1)
    server = HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}"), reg).start()
    try:
        yield server, reg
    finally:
        server.stop()


@pytest.mark.parametrize("accept", ["", "application/openmetrics-text; version=1.0.0"])
def test_a_streamed_scrape_is_the_whole_text_plain_and_gzipped(
    served: tuple[HttpServer, CollectorRegistry], accept: str
) -> None:
    server, reg = served
    want = encode(reg, choose_encoder(accept)[0])
    assert len(want) > 2 * STREAM_BYTES
    for encoding in ("identity", "gzip"):
        headers = {"Accept": accept, "Accept-Encoding": encoding}
        with httpx.stream("GET", f"{server.url}/metrics", headers=headers, timeout=30) as answer:
            raw = b"".join(answer.iter_raw())
        assert answer.status_code == 200
        assert answer.headers["transfer-encoding"] == "chunked" and "content-length" not in answer.headers
        assert answer.headers["content-type"] == choose_encoder(accept)[1]
        got = gzip.decompress(raw) if encoding == "gzip" else raw
        assert answer.headers.get("content-encoding", "identity") == encoding
        assert got == want
    assert want.count(b"# EOF") == (1 if accept else 0)


def test_an_http10_client_gets_the_whole_body_with_its_length(served: tuple[HttpServer, CollectorRegistry]) -> None:
    server, reg = served
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as client:
        client.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        answer = b"".join(iter(lambda: client.recv(1 << 16), b""))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") and b"Transfer-Encoding" not in head
    assert f"Content-Length: {len(body)}".encode() in head.split(b"\r\n")
    assert body == encode(reg, choose_encoder("")[0])


def test_a_small_body_keeps_its_content_length(served: tuple[HttpServer, CollectorRegistry]) -> None:
    server, _ = served
    answer = httpx.get(f"{server.url}/metrics", params={"name[]": "after"}, headers={"Accept-Encoding": "identity"})
    assert answer.headers["content-length"] == str(len(answer.content)) and "transfer-encoding" not in answer.headers
    assert answer.text == "# HELP after A gauge last.\n# TYPE after gauge\nafter 3.0\n"


def test_a_failure_is_a_500_before_the_stream_and_an_incomplete_body_after_it() -> None:
    early, late = registry(Written(fail_at=0)), registry(Written(fail_at=40))  # late: past the first megabyte
    (port,) = free_ports(1)
    servers = [HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}"), early).start()]
    (port2,) = free_ports(1)
    servers.append(HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port2}"), late).start())
    try:
        assert httpx.get(f"{servers[0].url}/metrics").status_code == 500
        for encoding in ("identity", "gzip"):
            with (
                pytest.raises(httpx.RemoteProtocolError),
                httpx.stream("GET", f"{servers[1].url}/metrics", headers={"Accept-Encoding": encoding}) as answer,
            ):
                assert answer.status_code == 200
                answer.read()
        assert httpx.get(f"{servers[1].url}/-/healthy").text == "OK\n"  # the listener goes on
    finally:
        for server in servers:
            server.stop()
