"""The columns an SLO reads (Spark SQL parsed with sqlglot) against those its source has: a Parquet directory's
schema read with pyarrow, or, for a source kind the stream reads from Kafka, the schema of the sink's rows, so a
streamed SLO needs no Parquet at `path`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.dataset as pads
import sqlglot
from sqlglot import exp

from pulse.envsubst import Loc
from slo import model


def sql_columns(text: str) -> set[str]:
    """Column names a Spark SQL expression reads, lower-cased (Spark resolves names case-insensitively)."""
    tree = sqlglot.parse_one(text, read="spark")
    return {column.name.lower() for column in tree.find_all(exp.Column)}


def source_problems(slo: model.Slo, streamed: Mapping[str, pa.Schema] | None = None) -> list[tuple[Loc, str]]:
    """The columns the SLO reads against its source's: a streamed source kind's (`streamed`: kind -> the schema of
    its rows on Kafka; nothing is read from `path`), else the Parquet directory's, which must exist and hold files."""
    if not isinstance(slo.source, model.EventsSource):
        return []
    path = slo.source.path
    if streamed is not None and slo.source.kind in streamed:
        return _column_problems(slo, streamed[slo.source.kind].names, f"the {slo.source.kind} stream's rows")
    if not path.exists():
        return [(("source", "path"), f"'{path}' does not exist")]
    if not path.is_dir():
        return [(("source", "path"), f"'{path}' is not a directory of Parquet files")]
    if next(path.rglob("*.parquet"), None) is None:
        return [(("source", "path"), f"'{path}' holds no .parquet files: the source is empty")]
    try:
        schema = pads.dataset(path, format="parquet", partitioning="hive", exclude_invalid_files=True).schema
    except (OSError, ValueError) as exc:
        return [(("source", "path"), f"'{path}': cannot read the Parquet schema: {exc}")]
    return _column_problems(slo, schema.names, f"'{path}'")


def _column_problems(slo: model.Slo, names: Sequence[str], where: str) -> list[tuple[Loc, str]]:
    assert isinstance(slo.source, model.EventsSource)
    columns = {name.lower() for name in names}
    known = ", ".join(names)
    problems: list[tuple[Loc, str]] = []
    if "time" not in columns:
        problems.append((("source", "path"), f"{where} has no `time` column (columns: {known})"))
    reads: list[tuple[Loc, Iterable[str]]] = [(("good",), sql_columns(slo.good)), (("total",), sql_columns(slo.total))]
    if slo.source.filter is not None:
        reads.append((("source", "filter"), sql_columns(slo.source.filter)))
    reads.append((("group_by",), [label.lower() for label in slo.group_by]))
    for loc, wanted in reads:
        missing = sorted(set(wanted) - columns)
        if missing:
            problems.append((loc, f"unknown column(s) {', '.join(missing)} in {where} (columns: {known})"))
    return problems
