"""`TableLog`: a `ParquetLog` whose items are Arrow tables built ahead (a cycle's rows, a batch's findings), each
filed under its own folder, so a component hands over a table and a folder instead of restating how to write them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pulse.parquet_log.writer import ParquetLog


@dataclass(frozen=True, slots=True)
class FiledTable:
    """Rows on their way to the writer, as one table."""

    folder: str
    """Where below the log's root they go, e.g. `groups/date=YYYY-MM-DD`."""
    table: pa.Table


class TableLog(ParquetLog[FiledTable]):
    """The writer of `FiledTable`s: a folder's tables are concatenated into one file, cast to `schema` when one is
    given (every file then has exactly its columns), and counted by their rows for the queue bound."""

    def __init__(
        self,
        directory: Path,
        *,
        subdirs: Sequence[str],
        name: str,
        schema: pa.Schema | None = None,
        flush_interval_s: float = 60.0,
        max_bytes: int = 1 << 30,
        queue_size: int = 100_000,
    ) -> None:
        self.schema = schema
        super().__init__(
            directory,
            table_of=self._concat,
            folder_of=lambda t: t.folder,
            size_of=lambda t: t.table.num_rows,
            subdirs=subdirs,
            name=name,
            flush_interval_s=flush_interval_s,
            max_bytes=max_bytes,
            queue_size=queue_size,
        )

    def _concat(self, items: Sequence[FiledTable]) -> pa.Table:
        table = pa.concat_tables([i.table for i in items])
        return table if self.schema is None else table.cast(self.schema)
