"""What a request to a listener may be: the deadline, the connection cap and the size limits, the checks on a
parsed header section, and the socket stream that enforces one deadline on every read and write."""

from __future__ import annotations

import io
import re
import socket
import time
from email.message import Message
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

REQUEST_TIMEOUT_S = 30.0
"""A client must complete its TLS handshake and send its whole request (line, headers, body) within this, however
it spreads the bytes; past it the connection is answered 408 (when it sent anything) and closed. Writing the
answer gets the same time again."""
MAX_CONNECTIONS = 64
"""Connections served at once (each holds a thread); past it new connections are answered 503."""
BUSY_CONNECTIONS = 16
"""Connections past the cap that are read (for BUSY_TIMEOUT_S at most) and answered 503; past these, closed."""
BUSY_TIMEOUT_S = 5.0
MAX_BODY_BYTES = 1 << 16
"""Request bodies are small JSON documents (Burrow's log level); a larger one is refused with 413."""
MAX_HEADER_BYTES = 1 << 16
"""The header section as a whole (stdlib already caps one line at 64 KiB and the count at 100); past it, 431."""
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters a header value may not hold (a tab may): NUL, a bare CR, or the CR LF of a folded line."""


def head_problem(headers: Message) -> tuple[int, str] | None:
    """What makes a parsed header section unacceptable, as (status, reason); None when it is sound. Pure, so the
    rules are tested without a socket."""
    if headers.defects:  # a line without a colon, a space before the colon, a bare CR...
        return 400, "malformed header line (each must be `Name: value`)"
    size = 0
    for name, value in headers.items():
        size += len(name) + len(value) + 4
        if _CONTROL.search(value):
            return 400, f"header {name!r} holds a control character or a folded line"
    if size > MAX_HEADER_BYTES:
        return 431, f"headers are limited to {MAX_HEADER_BYTES} bytes in all"
    if headers.get("Transfer-Encoding") is not None:
        return 501, "Transfer-Encoding is not supported: send the body with Content-Length"
    lengths = headers.get_all("Content-Length") or []
    if len(lengths) > 1:
        return 400, "more than one Content-Length"
    if lengths and not (lengths[0].strip().isascii() and lengths[0].strip().isdigit()):
        return 400, f"Content-Length {lengths[0]!r} is not a byte count"
    return None


class DeadlineStream(io.RawIOBase):
    """The connection's socket as a stream whose every read and write waits at most until one deadline, so a
    client dripping its request a byte at a time is cut off when the deadline passes (a plain socket timeout
    restarts with every byte)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = deadline
        self.received = 0

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def _arm(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request deadline passed")
        self.sock.settimeout(remaining)

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._arm()
        count = self.sock.recv_into(buffer)
        self.received += count
        return count

    def write(self, data: ReadableBuffer) -> int:
        """All of `data` (the handler ignores short writes), or TimeoutError at the deadline."""
        view = memoryview(data).cast("B")
        while view:
            self._arm()
            view = view[self.sock.send(view) :]
        return len(memoryview(data).cast("B"))
