"""A client that sends a request one byte at a time, the way a slow or hostile client holds a server thread: the
unit tests of the request deadline (tests/unit/pulse, tests/unit/bad_input) drip with it."""

from __future__ import annotations

import contextlib
import select
import socket


def read_all(client: socket.socket) -> bytes:
    """Everything the server sends until it closes (the answer may come in several segments)."""
    chunks: list[bytes] = []
    with contextlib.suppress(ConnectionResetError):  # the answer, then the reset of the unread drip
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def drip(port: int, start: bytes, interval_s: float, drops: int) -> bytes:
    """Send `start`, then one byte every `interval_s` (at most `drops` of them) until the server answers or
    closes; returns what it sent (empty when it never answered)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(start)
        for _ in range(drops):
            readable, _, _ = select.select([client], [], [], interval_s)
            if readable:
                return read_all(client)
            try:
                client.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                return read_all(client)
    return b""
