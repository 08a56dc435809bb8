"""The Kafka protocol's primitive types, read front to back (pure): one reader for the `__consumer_offsets` decoder
(lag/ingest/) and the hand-written DescribeQuorum (`quorum_wire.py`). Big-endian; flexible versions use unsigned
varints for lengths (length + 1, 0 for null) and end each struct with tagged fields (apache/kafka
`clients/src/main/resources/common/message/README.md`)."""

from __future__ import annotations

import struct


class Truncated(ValueError):
    """The buffer ended (or a length was impossible) before the field its version promises: not a Kafka answer."""


class Reader:
    """Cursor over a big-endian Kafka protocol buffer."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise Truncated(f"answer ends at byte {len(self.buf)}, {n} more expected at {self.pos}")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return int(struct.unpack(">b", self._take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uuid(self) -> bytes:
        """A topic id: 16 bytes, kept raw (Kafka prints it as URL-safe base64)."""
        return self._take(16)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise Truncated("unsigned varint longer than 5 bytes")

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise Truncated(f"negative string length {n}")
        return self._take(n).decode("utf-8", errors="replace")

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n == -1 else self._take(n).decode("utf-8", errors="replace")

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1).decode("utf-8", errors="replace")

    def bytes_(self) -> bytes:
        n = self.int32()
        return b"" if n == -1 else self._take(n)

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())

    def array_length(self) -> int:
        n = self.int32()
        if n < -1 or n > len(self.buf):  # each element needs at least one byte
            raise Truncated(f"array length {n} impossible in {len(self.buf)} bytes")
        return max(n, 0)

    def compact_array_length(self) -> int:
        """A flexible version's array length (a null array reads as empty)."""
        n = self.uvarint() - 1
        if n > len(self.buf) - self.pos:  # each element needs at least one byte
            raise Truncated(f"array length {n} impossible in {len(self.buf) - self.pos} bytes")
        return max(n, 0)
