"""The audit's Parquet log: a cycle's `audit-broker` rows land under `broker/date=<UTC date of the cycle>/` with
the stream's schema, which is what an SLO's `audit` source reads."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq

from audit.broker_log import BROKER_ROWS, BrokerLog, settled_of
from audit.minutes import MINUTE_MS, MinuteAudit
from audit.streams import BROKER_SCHEMA, broker_table

MINUTE = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS
"""2027-01-15T08:00:00Z."""


def cycle_rows() -> list[MinuteAudit]:
    return [
        MinuteAudit("billing", "orders", MINUTE, 10, 10, MINUTE + 90_000),
        MinuteAudit("fraud", "orders", MINUTE, 10, 4, None),
    ]


def test_a_cycle_is_filed_under_the_date_of_its_time() -> None:
    table = broker_table("prod", cycle_rows(), MINUTE + 600_000)
    assert settled_of(table).folder == f"{BROKER_ROWS}/date=2027-01-15"


def test_rows_are_written_with_the_stream_schema(tmp_path: Path) -> None:
    log = BrokerLog(tmp_path, flush_interval_s=60).start()
    first = broker_table("prod", cycle_rows(), MINUTE + 600_000)
    late = broker_table("prod", cycle_rows()[1:], MINUTE + 86_400_000)  # the next day's cycle
    assert log.record(first) and log.record(late)
    assert not log.record(first.slice(0, 0)), "an empty cycle is not queued"
    log.stop()
    files = sorted(p.relative_to(tmp_path).parent.as_posix() for p in tmp_path.rglob("*.parquet"))
    assert files == [f"{BROKER_ROWS}/date=2027-01-15", f"{BROKER_ROWS}/date=2027-01-16"]
    assert all(pq.read_schema(p) == BROKER_SCHEMA for p in tmp_path.rglob("*.parquet"))
    read = pads.dataset(tmp_path / BROKER_ROWS, format="parquet", partitioning="hive").to_table()
    assert read.num_rows == 3 and log.stats().rows_written == 3
    assert sorted(read.column("records_passed").to_pylist()) == [4, 4, 10]
