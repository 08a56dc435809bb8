"""pulse/sli_sink/encode.py: rows to records and spool lines and back, without Kafka."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from pulse.sli_sink.encode import (
    HEADER_SCHEMA,
    HEADER_SEQ,
    HEADER_SOURCE,
    HEADER_VERSION,
    SpooledEventCodec,
    Stream,
    decode_rows,
    encode_row,
    events_of,
    header_map,
)

SCHEMA = pa.schema(
    [
        pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("ok", pa.bool_(), nullable=False),
        pa.field("latency_s", pa.float64()),
        pa.field("error", pa.string()),
    ]
)
STREAM = Stream("test", 3, SCHEMA)
T0 = datetime(2026, 11, 28, 23, 59, 59, 123456, tzinfo=UTC)


def table(n: int = 3) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "time": T0,
                "cluster": "prod" if i % 2 else "dr",
                "partition": i,
                "ok": i != 1,
                "latency_s": None if i == 1 else 0.1 * i,
                "error": "tab\there\nnewline é" if i == 1 else None,
            }
            for i in range(n)
        ],
        schema=SCHEMA,
    )


def test_rows_survive_the_round_trip_exactly() -> None:
    original = table()
    events = events_of(STREAM, original, "abcd1234", 40)
    assert decode_rows(STREAM, [e.value for e in events]).equals(original)


def test_events_are_numbered_in_row_order_and_keyed_by_cluster() -> None:
    events = events_of(STREAM, table(), "abcd1234", 40)
    assert [e.seq for e in events] == [40, 41, 42]
    assert [e.key for e in events] == [b"dr", b"prod", b"dr"]
    assert {e.source for e in events} == {"abcd1234"}


def test_headers_carry_schema_version_and_identity() -> None:
    event = events_of(STREAM, table(1), "abcd1234", 7)[0]
    assert header_map(event.headers()) == {
        HEADER_SCHEMA: "test",
        HEADER_VERSION: "3",
        HEADER_SOURCE: "abcd1234",
        HEADER_SEQ: "7",
    }


def test_value_has_every_column_nulls_included_and_utc_time() -> None:
    value = json.loads(events_of(STREAM, table(2), "s", 0)[1].value)
    assert list(value) == SCHEMA.names
    assert value["time"] == "2026-11-28T23:59:59.123456Z"
    assert value["latency_s"] is None


def test_a_value_never_holds_a_newline_or_tab() -> None:
    """The spool line relies on it (header, TAB, value, newline)."""
    value = encode_row({"error": "a\tb\nc\rd"})
    assert b"\n" not in value and b"\t" not in value


def test_spool_line_round_trip_keeps_the_value_bytes() -> None:
    codec = SpooledEventCodec()
    for event in events_of(STREAM, table(), "abcd1234", 0):
        line = codec.encode(event, T0)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert codec.decode(line.rstrip(b"\n")) == event
        assert codec.incident(event) == ("abcd1234", event.seq)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b'{"f":1,"s":"x","v":1,"src":"a","seq":1,"k":"c"}', id="no-tab"),
        pytest.param(b'{"f":2,"s":"x","v":1,"src":"a","seq":1,"k":"c"}\t{}', id="other-format"),
        pytest.param(b'{"f":1,"s":"x","v":1,"src":"a","k":"c"}\t{}', id="no-seq"),
        pytest.param(b'{"f":1,"s":"x","v":true,"src":"a","seq":1,"k":"c"}\t{}', id="bool-version"),
        pytest.param(b'{"f":1,"s":"x","v":1,"src":"a","seq":"1","k":"c"}\t{}', id="text-seq"),
        pytest.param(b"[1]\t{}", id="not-an-object"),
        pytest.param(b"{\t{}", id="bad-json"),
    ],
)
def test_a_bad_spool_line_is_a_value_error(line: bytes) -> None:
    with pytest.raises(ValueError):
        SpooledEventCodec().decode(line)


def test_decode_refuses_values_of_another_schema() -> None:
    with pytest.raises(ValueError, match="test schema"):
        decode_rows(STREAM, [b'{"time":"2026-11-28T00:00:00Z","cluster":"c","partition":"zero","ok":true}'])
    with pytest.raises(ValueError, match="JSON object"):
        decode_rows(STREAM, [b"[1, 2]"])
