"""docs/audit.md is the contract other languages publish to: its column tables must equal the schemas the audit
writes, and its freshness SLO entry must be one the SLO spec accepts (the allow-list, the broker rows' columns)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
import sqlglot
import yaml
from sqlglot import exp

from audit.minutes import MINUTE_MS, MinuteAudit
from audit.streams import BROKER_SCHEMA, BROKER_STREAM, CLIENT_SCHEMA, CLIENT_STREAM, broker_table, utc
from pulse.config import SloSpec
from pulse.sli_sink import decode_rows, events_of
from slo.sql_allowlist import expression_refusals

DOC = Path(__file__).resolve().parents[3] / "docs" / "audit.md"


def table_after(heading: str) -> list[tuple[str, str, bool]]:
    """(column, type, nullable) of the first table after `heading`."""
    text = DOC.read_text(encoding="utf-8").split(heading, 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|", text, re.M)
    columns: list[tuple[str, str, bool]] = []
    for name, kind, null_when in rows:
        if any(c[0] == name for c in columns):
            break  # the next table
        columns.append((name, kind.strip(), null_when.strip() != "never"))
    return columns


@pytest.mark.parametrize(
    ("heading", "schema"),
    [("### What each count means", BROKER_SCHEMA), ("### Client rows", CLIENT_SCHEMA)],
    ids=["audit-broker", "audit-client"],
)
def test_the_doc_tables_are_the_schemas(heading: str, schema: pa.Schema) -> None:
    named = {"double": "float64"}  # the doc uses the Parquet tables' spelling (docs/sli-log.md)
    assert table_after(heading) == [(f.name, named.get(str(f.type), str(f.type)), f.nullable) for f in schema]


def test_the_documented_slo_entry_fits_the_broker_rows() -> None:
    block = DOC.read_text(encoding="utf-8").split("## A data-freshness SLO", 1)[1].split("```yaml", 1)[1]
    slo = yaml.safe_load(block.split("```", 1)[0])["slos"][0]
    assert SloSpec.model_validate(slo).source.type == "audit"
    for key in ("good", "total"):
        tree = sqlglot.parse_one(slo[key], read="spark")
        assert expression_refusals(tree) == []
        assert {c.name for c in tree.find_all(exp.Column)} <= set(BROKER_SCHEMA.names)
    assert {c.name for c in sqlglot.parse_one(slo["source"]["filter"], read="spark").find_all(exp.Column)} <= set(
        BROKER_SCHEMA.names
    )


def test_broker_rows_round_trip_through_the_sink_encoding() -> None:
    minute = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS
    audits = [
        MinuteAudit("billing", "orders", minute, 10, 10, minute + 90_000),
        MinuteAudit("fraud", "orders", minute, 10, 4, None),
    ]
    table = broker_table("prod", audits, minute + 600_000)
    assert table.column("latency_s").to_pylist() == [30.0, None]
    assert table.column("completeness").to_pylist() == [1.0, 0.4]
    assert table.column("passed_time").to_pylist() == [utc(minute + 90_000), None]
    events = events_of(BROKER_STREAM, table, "0badcafe", 0)
    assert {e.key for e in events} == {b"prod"}
    assert decode_rows(BROKER_STREAM, [e.value for e in events]).equals(table)
    assert CLIENT_STREAM.name == "audit-client" and CLIENT_STREAM.version == BROKER_STREAM.version == 1
