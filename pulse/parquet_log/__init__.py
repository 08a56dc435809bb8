"""An append-only Parquet log under a directory, hive-partitioned (`date=YYYY-MM-DD/part-*.parquet`), shared by the
SLI event logs of the canary (`canary/sli_log.py`), the lag evaluator (`lag/notify/evaluation_log.py`) and the
audit's broker and findings logs (`audit/broker_log.py`, `audit/findings_log.py`).

The producing side never waits for the disk: `offer` only puts an item on a queue bounded in rows (full means the
item is dropped and counted); one writer thread turns the queue into a file per folder every `flush_interval_s`,
and keeps the directory under `max_bytes` by removing the oldest files first. What an item is, which folder it
goes to and how items become an Arrow table is the caller's (`table_of`, `folder_of`, `size_of`).

    writer.py      `ParquetLog` (queue, writer and compactor threads) and its counters
    table_log.py   `TableLog`: a `ParquetLog` of tables built ahead, each filed under its folder
    files.py       the `date=` folders, listing part files, removing the oldest for the bound
    compaction.py  merging a closed date's files, crash-safe through a manifest
    metrics.py     `ParquetLogCollector`: the writer's counters as Prometheus families
"""

from pulse.parquet_log.compaction import PART_FILE
from pulse.parquet_log.files import date_folder, files_to_remove
from pulse.parquet_log.metrics import ParquetLogCollector
from pulse.parquet_log.table_log import FiledTable, TableLog
from pulse.parquet_log.writer import ParquetLog, ParquetLogStats

__all__ = [
    "PART_FILE",
    "FiledTable",
    "ParquetLog",
    "ParquetLogCollector",
    "ParquetLogStats",
    "TableLog",
    "date_folder",
    "files_to_remove",
]
