"""SLI rows as Kafka records (pure): one record per row, its value the row as a JSON object with the SLI log's
column names (docs/sli-log.md), its headers the schema, its version and the event's identity; and the spool line
that holds a record while its cluster is away. The encoding was chosen by bench/sli_sink_bench.py
(docs/benchmarks.md, "SLI sink encoding").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

HEADER_SCHEMA = "kp-schema"
"""Which SLI log the row belongs to (`Stream.name`: `canary`, `lag-groups`, `lag-partitions`)."""
HEADER_VERSION = "kp-schema-version"
"""That schema's version (decimal); a reader refuses versions it does not know rather than guessing."""
HEADER_SOURCE = "kp-source"
"""The sink instance that first queued the event (8 hex digits, new at each start)."""
HEADER_SEQ = "kp-seq"
"""Per-source sequence number (decimal, from 0): with `kp-source`, the event's identity, so a reader can drop the
copies a crash between delivery and the spool's rewrite can leave (delivery is at least once across crashes)."""

SPOOL_LINE_FORMAT = 1
"""`f` of each spool line's header."""


@dataclass(frozen=True, slots=True)
class Stream:
    """One SLI log as published: the name in `kp-schema` and the topic suffix, and its schema version."""

    name: str
    """`canary`, `lag-groups`, `lag-partitions`: lower-case letters, digits and '-' (it ends the topic name)."""
    version: int
    """Bumped when a column changes meaning or type, or one is removed; an added nullable column keeps it."""
    schema: pa.Schema
    """The Arrow schema of the rows (the Parquet log's), for `decode_rows`."""


@dataclass(frozen=True, slots=True)
class SpooledEvent:
    """One row on its way to Kafka: what the record carries, and its identity."""

    stream: str
    version: int
    source: str
    seq: int
    key: bytes
    """The record key: the row's `cluster`, so one cluster's events stay in order on one partition."""
    value: bytes
    """The row as compact JSON (`encode_row`)."""

    @property
    def identity(self) -> tuple[str, int]:
        return (self.source, self.seq)

    def headers(self) -> list[tuple[str, str | bytes | None]]:
        return [
            (HEADER_SCHEMA, self.stream.encode()),
            (HEADER_VERSION, str(self.version).encode()),
            (HEADER_SOURCE, self.source.encode()),
            (HEADER_SEQ, str(self.seq).encode()),
        ]


def _plain(value: object) -> object:
    """A JSON-ready value: timestamps as RFC 3339 UTC with microseconds and `Z` (Spark's `to_timestamp` and
    `datetime.fromisoformat` read it); everything else is already a JSON scalar."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def encode_row(row: dict[str, Any]) -> bytes:
    """One row as a JSON object, every column present (null included), no spaces; never contains a newline or
    a tab (json escapes both inside strings), which the spool line relies on."""
    return json.dumps({k: _plain(v) for k, v in row.items()}, separators=(",", ":"), ensure_ascii=False).encode()


def events_of(stream: Stream, table: pa.Table, source: str, first_seq: int) -> list[SpooledEvent]:
    """The table's rows as events numbered from `first_seq`, in row order."""
    rows = table.to_pylist()
    return [
        SpooledEvent(
            stream.name, stream.version, source, first_seq + i, str(row.get("cluster", "")).encode(), encode_row(row)
        )
        for i, row in enumerate(rows)
    ]


def decode_rows(stream: Stream, values: Sequence[bytes]) -> pa.Table:
    """Record values back into a table of the stream's schema (readers and tests); ValueError for a value that
    is not a JSON object of that schema."""
    rows: list[dict[str, Any]] = []
    for value in values:
        row = json.loads(value)
        if not isinstance(row, dict):
            raise ValueError(f"not a JSON object: {value[:80]!r}")
        rows.append(row)
    for field in stream.schema:
        if pa.types.is_timestamp(field.type):
            for row in rows:
                if isinstance(row.get(field.name), str):
                    row[field.name] = datetime.fromisoformat(row[field.name])
    try:
        return pa.Table.from_pylist(rows, schema=stream.schema)
    except (pa.ArrowException, TypeError) as exc:
        raise ValueError(f"rows do not match the {stream.name} schema: {exc}") from exc


def header_map(headers: Sequence[tuple[str, str | bytes | None]] | None) -> dict[str, str]:
    """A record's headers as text (the last of a repeated name wins)."""
    return {k: v if isinstance(v, str) else (v or b"").decode(errors="replace") for k, v in headers or ()}


class SpooledEventCodec:
    """Spool lines (pulse/alerts/spool.py's `SpoolCodec`): a JSON header, a tab, then the record value verbatim,
    so delivering from the spool re-encodes nothing:
    `{"f":1,"s":"canary","v":1,"src":"3f9a1c2e","seq":17,"k":"prod"}<TAB>{"time":...}`."""

    def encode(self, item: SpooledEvent, spooled_at: datetime) -> bytes:
        header = {
            "f": SPOOL_LINE_FORMAT,
            "s": item.stream,
            "v": item.version,
            "src": item.source,
            "seq": item.seq,
            "k": item.key.decode(),
        }
        return json.dumps(header, separators=(",", ":")).encode() + b"\t" + item.value + b"\n"

    def decode(self, line: bytes) -> SpooledEvent:
        head, tab, value = line.rstrip(b"\n").partition(b"\t")
        if not tab or not value:
            raise ValueError("no tab between the header and the value")
        meta = json.loads(head)
        if not isinstance(meta, dict) or meta.get("f") != SPOOL_LINE_FORMAT:
            raise ValueError(f"not a spool line of format {SPOOL_LINE_FORMAT}")
        try:
            return SpooledEvent(
                _text(meta["s"]),
                _int(meta["v"]),
                _text(meta["src"]),
                _int(meta["seq"]),
                _text(meta["k"]).encode(),
                value,
            )
        except KeyError as exc:
            raise ValueError(f"spool line header lacks {exc}") from None

    def incident(self, item: SpooledEvent) -> tuple[str, int]:
        """Every event is its own: none supersedes another."""
        return item.identity


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected an integer, got {type(value).__name__}")
    return value
