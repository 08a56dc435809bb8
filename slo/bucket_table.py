"""Where the stream's bucket table is written and read back: a local directory (pyarrow on the driver, each
micro-batch one file renamed into place) or a Hadoop filesystem URL (Spark's own Parquet writer and reader, the URL
handed over as written, so `hdfs://` or `s3a://` need no mount on any host). Either way one micro-batch is one
entry named after its batch id, so a replay after a crash rewrites that entry instead of adding a second one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from pulse.locations import join, local_path, shown
from slo.buckets import BUCKET_SCHEMA, read_table

SPARK_SETTINGS = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
"""Session settings the URL table needs: minutes as Parquet's micros with UTC, as pyarrow writes and reads them
(Spark's default, INT96, is read back by pyarrow as nanoseconds without a zone)."""


def entry_name(batch_id: int) -> str:
    return f"part-{batch_id:012d}"


class BucketTable:
    """The table at `location` (a path or a URL, pulse/locations.py)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._local = local_path(location)

    def prepare(self, spark: SparkSession) -> None:
        """Create the table's directory: a local one with mkdir; at a URL, by writing an empty hidden entry
        (`_created`, which readers skip) through Spark, so the first read finds a directory."""
        if self._local is not None:
            self._local.mkdir(parents=True, exist_ok=True)
            return
        empty = spark.createDataFrame([], from_arrow_schema(BUCKET_SCHEMA))
        empty.coalesce(1).write.mode("ignore").parquet(join(self.location, "_created"))

    def write(self, spark: SparkSession, table: pa.Table, batch_id: int) -> None:
        """One micro-batch's buckets (rows of BUCKET_SCHEMA); none is written for an empty batch."""
        if table.num_rows == 0:
            return
        if self._local is not None:
            _write_file(self._local, table, batch_id)
            return
        for key, value in SPARK_SETTINGS.items():
            spark.conf.set(key, value)
        frame = spark.createDataFrame(table)
        frame.coalesce(1).write.mode("overwrite").parquet(join(self.location, entry_name(batch_id)))

    def read(self, spark: SparkSession | None, missing_ok: bool = True) -> pa.Table:
        """Every bucket written so far (empty when nothing was; FileNotFoundError instead when not `missing_ok` and
        there is no table); a URL table needs `spark`."""
        if self._local is not None:
            if not missing_ok or self._local.is_dir():
                return read_table(self._local)
            return BUCKET_SCHEMA.empty_table()
        if spark is None:
            raise ValueError("a bucket table at a URL is read through Spark")
        reader = spark.read.schema(from_arrow_schema(BUCKET_SCHEMA)).option("recursiveFileLookup", "true")
        try:
            found = reader.parquet(self.location).toArrow()
        except AnalysisException as exc:
            if "PATH_NOT_FOUND" in str(exc.getCondition() or "") or "Path does not exist" in str(exc):
                if not missing_ok:
                    raise FileNotFoundError(f"no bucket table at {shown(self.location)}") from None
                return BUCKET_SCHEMA.empty_table()
            raise
        return pa.Table.from_batches(found.to_batches(), schema=found.schema).cast(BUCKET_SCHEMA)


def _write_file(directory: Path, table: pa.Table, batch_id: int) -> None:
    """`part-<batch id>.parquet`, written beside and renamed into place whole after an fsync."""
    final = directory / f"{entry_name(batch_id)}.parquet"
    staged = directory / f".{entry_name(batch_id)}.parquet.tmp"
    pq.write_table(table, staged, compression="zstd")
    with open(staged, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(staged, final)
