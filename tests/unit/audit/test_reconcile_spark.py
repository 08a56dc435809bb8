"""The reconciliation's Spark plans give the findings of its Python rules on the same tables (local Spark), and read
the `audit-client` and `audit-broker` rows as the client library and the broker-side audit write them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from audit.minutes import MinuteAudit
from audit.reconcile import COUNT_COLUMNS, CountRow, Finding, judge, totals_of
from audit.reconcile_spark import count_rows, findings, totals
from audit.streams import ClientOrigin, broker_table, client_table
from tests.unit.audit.test_reconcile import CASES, Case, M, minute

pytestmark = pytest.mark.usefixtures("spark")

ROWS = pa.schema(
    [
        pa.field("__id", pa.string()),
        pa.field("cluster", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("minute", pa.timestamp("us", tz="UTC")),
        pa.field("grp", pa.string()),
        *(pa.field(c, pa.bool_() if c == "complete" else pa.int64()) for c in COUNT_COLUMNS),
    ]
)


def rows_table(rows: Sequence[CountRow], ids: Sequence[str] | None = None) -> pa.Table:
    """Count rows as the Spark plans read them (`__id` the row's index unless given)."""
    return pa.Table.from_pylist(
        [
            {
                "__id": str(i) if ids is None else ids[i],
                "cluster": r.cluster,
                "topic": r.topic,
                "minute": datetime.fromtimestamp(r.minute_ms / 1000, UTC),
                "grp": r.group,
                **{c: getattr(r, c) for c in COUNT_COLUMNS},
            }
            for i, r in enumerate(rows)
        ],
        schema=ROWS,
    )


def frame(spark: SparkSession, rows: Sequence[CountRow]) -> DataFrame:
    return spark.createDataFrame(rows_table(rows).to_pandas())


def collected(found: DataFrame) -> list[Finding]:
    return sorted(
        Finding(int(r["minute"].timestamp() * 1000), r["cluster"], r["topic"], r["group"], r["kind"], int(r["count"]))
        for r in found.collect()
    )


def test_spark_and_python_find_the_same_on_every_table(spark: SparkSession) -> None:
    """All tables of one `counted_groups` in one Spark job, each under its own cluster name."""
    cases: list[Case] = [p.values[0] for p in CASES]  # type: ignore[misc]
    for counted in {c.counted for c in cases}:
        rows = [
            replace(row, cluster=f"case-{index}")
            for index, case in enumerate(cases)
            if case.counted == counted
            for row in case.rows
        ]
        want = judge(totals_of(rows), counted)
        assert collected(findings(totals(frame(spark, rows)), counted)) == want
        assert want  # the tables do find something
    assert len({c.counted for c in cases}) == 2


def test_client_and_broker_rows_become_count_rows(spark: SparkSession) -> None:
    now = M + 10 * 60_000
    shop = ClientOrigin("prod", "shop", "producer")
    billing = ClientOrigin("prod", "billing", "consumer", group="billing")
    nameless = ClientOrigin("prod", "batch-job", "consumer")
    zero = {"latency_count": 0, "latency_sum_s": 0.0, "latency_max_s": None}

    def counts(**given: int) -> dict[str, object]:
        base = dict.fromkeys(("sent", "acknowledged", "failed", "received", "processed"), 0)
        return {"topic": "orders", "minute": datetime.fromtimestamp(M / 1000, UTC), **base, **given, **zero}

    client = pa.concat_tables(
        [
            client_table(shop, [counts(sent=10, acknowledged=8, failed=1)], now),
            client_table(billing, [counts(received=7, processed=7)], now),
            client_table(nameless, [counts(received=9, processed=9)], now),
        ]
    )
    broker = broker_table("prod", [MinuteAudit("billing", "orders", M, 9, 9, M + 90_000)], now)

    def decoded(table: pa.Table) -> DataFrame:
        ids = pa.array([f"s:{i}" for i in range(table.num_rows)])
        return spark.createDataFrame(table.add_column(0, "__id", ids).to_pandas())

    got = collected(findings(totals(count_rows(decoded(client), decoded(broker)))))
    assert got == [
        Finding(minute(0), "prod", "orders", "", "unacknowledged", 2),
        Finding(minute(0), "prod", "orders", "billing", "skipped", 2),
    ]
