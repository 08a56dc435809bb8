"""`TableLog`: tables handed over with their folder land there, one file per folder and flush, cast to the log's
schema when it has one (the audit's logs) and as they are without (the lag evaluation log)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pulse.parquet_log import FiledTable, TableLog

SCHEMA = pa.schema([pa.field("n", pa.int64(), nullable=False)])


def small(values: list[int]) -> pa.Table:
    return pa.table({"n": pa.array(values, pa.int32())})


@pytest.mark.parametrize(("schema", "written"), [(SCHEMA, pa.int64()), (None, pa.int32())], ids=["cast", "as-is"])
def test_tables_are_written_under_their_folders(tmp_path: Path, schema: pa.Schema | None, written: pa.DataType) -> None:
    log = TableLog(tmp_path, subdirs=("rows",), name="test log", schema=schema).start()
    assert log.offer(FiledTable("rows/date=2027-01-15", small([1, 2])))
    assert log.offer(FiledTable("rows/date=2027-01-15", small([3])))
    assert log.offer(FiledTable("rows/date=2027-01-16", small([4])))
    log.stop()
    files = sorted(tmp_path.rglob("*.parquet"))
    assert [p.relative_to(tmp_path).parent.as_posix() for p in files] == [
        "rows/date=2027-01-15",
        "rows/date=2027-01-16",
    ]
    assert [pq.read_table(p).column("n").to_pylist() for p in files] == [[1, 2, 3], [4]]
    assert all(pq.read_schema(p).field("n").type == written for p in files)
    assert log.stats().rows_written == 4
