"""The lag evaluation log: every `interval_s` every consumer group is evaluated and written as one Parquet row
(`groups/date=YYYY-MM-DD/`), and with `partitions` on also every group-partition (`partitions/...`), which the SLO
engine reads as a `lag` source (DESIGN "SLI event log"; schema in docs/sli-log.md, "Lag evaluation log").

Row building is pure (`group_table`, `partition_table`; built through `pulse.arrow_columns`, which spares the
process pandas). Without partition rows, a cycle of the service reads every OK group's row off one columnar pass
(`rows_group_table`, the same rows) and builds objects only for the others: the objects of every group-partition
were nearly all of the cycle's CPU (docs/benchmarks.md). `EvaluationLog` runs the cycle on its own thread and hands
each cycle's rows to the shared Parquet writer (`pulse.parquet_log`), which never makes the cycle wait: a cycle
whose rows do not fit its queue is dropped and counted. A group without a verdict (its cluster unreadable: UNKNOWN;
expired: NOTFOUND) is written with `unknown` true, so an SLO can count it as no data rather than as bad.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from lag.protocol import ClusterRows, GroupStatus, PartitionVerdict, Status
from pulse import arrow_columns
from pulse.config import LagEvaluationLogConfig
from pulse.lifecycle import Periodic
from pulse.parquet_log import FiledTable, ParquetLog, ParquetLogCollector, TableLog, date_folder
from pulse.sli_sink import SliPublisher, Stream

_LOG = logging.getLogger(__name__)

GROUPS = "groups"
"""The folder of the group rows below the log's root: the path an SLO's `lag` source names."""
PARTITIONS = "partitions"
"""The folder of the group-partition rows (with `lag.evaluation_log.partitions`)."""

_TIME = pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False)

GROUP_SCHEMA = pa.schema(
    [
        _TIME,
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("ok", pa.bool_(), nullable=False),
        pa.field("unknown", pa.bool_(), nullable=False),
        pa.field("complete", pa.float64(), nullable=False),
        pa.field("partition_count", pa.int32(), nullable=False),
        pa.field("totallag", pa.int64(), nullable=False),
        pa.field("maxlag", pa.int64()),
        pa.field("maxlag_topic", pa.string()),
        pa.field("maxlag_partition", pa.int32()),
        pa.field("lag_seconds", pa.float64()),
        pa.field("exact_lag_seconds", pa.float64()),
        pa.field("reason", pa.string()),
    ]
)
"""The columns of every group file, in order (docs/sli-log.md); `date` is the hive directory, not stored."""

PARTITION_SCHEMA = pa.schema(
    [
        _TIME,
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("ok", pa.bool_(), nullable=False),
        pa.field("unknown", pa.bool_(), nullable=False),
        pa.field("complete", pa.float64(), nullable=False),
        pa.field("lag", pa.int64(), nullable=False),
        pa.field("offset", pa.int64()),
        pa.field("lag_seconds", pa.float64()),
        pa.field("exact_lag_seconds", pa.float64()),
        pa.field("reason", pa.string()),
    ]
)
"""The columns of every group-partition file, in order (docs/sli-log.md)."""

GROUPS_STREAM = Stream("lag-groups", 1, GROUP_SCHEMA)
"""The group rows on Kafka (`sli_sink`; docs/sli-log.md, "Kafka sink"): topic `<prefix>lag-groups`."""
PARTITIONS_STREAM = Stream("lag-partitions", 1, PARTITION_SCHEMA)
"""The group-partition rows on Kafka: topic `<prefix>lag-partitions`."""

PARTITIONING = pa.schema([pa.field("date", pa.string())])
"""The hive partition column, for `pyarrow.dataset.partitioning(PARTITIONING, flavor="hive")`."""

NO_VERDICT = (Status.UNKNOWN, Status.NOTFOUND)
"""Group statuses written with `unknown` true: the cluster cannot be read, or the group expired."""
_OK, _OK_NAME = int(Status.OK), Status.OK.name


def _times(now_ms: int, count: int) -> list[int]:
    return [now_ms * 1000] * count


def group_columns() -> dict[str, list[Any]]:
    """The group file's columns but `time`, empty: filled a row at a time by `add_group` (or `log_rows.py`)."""
    return {f.name: [] for f in GROUP_SCHEMA if f.name != "time"}


def add_group(columns: dict[str, list[Any]], s: GroupStatus) -> None:
    """One group's row: `ok` when judged OK, `unknown` when not judged at all."""
    m = s.maxlag
    columns["cluster"].append(s.cluster)
    columns["group"].append(s.group)
    columns["status"].append(s.status.name)
    columns["ok"].append(s.status is Status.OK)
    columns["unknown"].append(s.status in NO_VERDICT)
    columns["complete"].append(s.complete)
    columns["partition_count"].append(s.partition_count)
    columns["totallag"].append(s.totallag)
    columns["maxlag"].append(None if m is None else m.current_lag)
    columns["maxlag_topic"].append(None if m is None else m.topic)
    columns["maxlag_partition"].append(None if m is None else m.partition)
    columns["lag_seconds"].append(s.lag_seconds)
    columns["exact_lag_seconds"].append(s.exact_lag_seconds)
    columns["reason"].append(s.reason or None)


def columns_table(columns: dict[str, list[Any]], now_ms: int) -> pa.Table:
    """The group table of filled `group_columns`, every row stamped `now_ms`."""
    return arrow_columns.table({"time": _times(now_ms, len(columns["group"])), **columns}, GROUP_SCHEMA)


def group_table(statuses: Sequence[GroupStatus], now_ms: int) -> pa.Table:
    """One row per group evaluated at `now_ms` (pure): `ok` when judged OK, `unknown` when not judged at all."""
    columns = group_columns()
    for s in statuses:
        add_group(columns, s)
    return columns_table(columns, now_ms)


def rows_group_table(rows: Sequence[ClusterRows], detailed: Iterable[GroupStatus], now_ms: int) -> pa.Table:
    """`group_table` of every group of `rows` (a scrape's arrays at `now_ms`), in their order (pure): an OK
    group's row read off the arrays, whose values are the objects' (`scrape.py`), and every other group's from
    `detailed`, the objects of the groups not OK in the same order (`LagReader.group_statuses`)."""
    columns = group_columns()
    others = iter(detailed)
    for r in rows:
        sizes = np.diff(r.starts)
        nonempty = sizes > 0
        full = np.zeros(len(sizes), dtype=np.int64)
        maxlag_at = np.full(len(sizes), -1, dtype=np.int64)
        if nonempty.any():
            starts = r.starts[:-1][nonempty]
            full[nonempty] = np.add.reduceat(r.full.astype(np.int64), starts)
            top = np.repeat(np.maximum.reduceat(r.current_lag, starts), sizes[nonempty])
            at = np.where(r.current_lag == top, np.arange(len(r.current_lag)), len(r.current_lag))
            maxlag_at[nonempty] = np.minimum.reduceat(at, starts)  # the first partition of the largest lag
        values = zip(
            r.names,
            r.status.tolist(),
            sizes.tolist(),
            full.tolist(),
            r.totallag.tolist(),
            maxlag_at.tolist(),
            r.lag_seconds.tolist(),
            r.exact_seconds.tolist(),
            strict=True,
        )
        current_lag, topic_ids, partitions = r.current_lag, r.topic_ids, r.partitions
        for name, code, size, complete, totallag, m, lag_s, exact_s in values:
            if code != _OK:
                add_group(columns, next(others))
                continue
            columns["cluster"].append(r.cluster)
            columns["group"].append(name)
            columns["status"].append(_OK_NAME)
            columns["ok"].append(True)
            columns["unknown"].append(False)
            columns["complete"].append(complete / size if size else 0.0)
            columns["partition_count"].append(size)
            columns["totallag"].append(totallag)
            columns["maxlag"].append(None if m < 0 else int(current_lag[m]))
            columns["maxlag_topic"].append(None if m < 0 else r.topic_names[int(topic_ids[m])])
            columns["maxlag_partition"].append(None if m < 0 else int(partitions[m]))
            columns["lag_seconds"].append(None if lag_s != lag_s else lag_s)  # NaN: None
            columns["exact_lag_seconds"].append(None if exact_s != exact_s else exact_s)
            columns["reason"].append(None)  # an OK group has no reason
    return columns_table(columns, now_ms)


def rows_and_details(source: RowSource, now_ms: int) -> tuple[list[ClusterRows], list[GroupStatus]]:
    """Every group's rows at `now_ms` from one columnar pass, and the objects of the groups not OK (their rows carry a
    reason), under one hold of the lock: what `rows_group_table` reads."""
    detailed: list[GroupStatus] = []
    with source.locked():
        rows = source.scrape_rows(now_ms)
        for r in rows:
            named = [name for name, code in zip(r.names, r.status.tolist(), strict=True) if code != _OK]
            if named:
                detailed += source.group_statuses(r.cluster, named, now_ms)
    return rows, detailed


def is_judged(verdict: PartitionVerdict) -> bool:
    """A partition the group never committed on is a placeholder (Burrow reports it OK): no verdict, no data."""
    return verdict.end is not None


def partition_table(statuses: Sequence[GroupStatus], now_ms: int) -> pa.Table:
    """One row per group-partition evaluated at `now_ms` (pure); groups without a verdict have no partitions."""
    columns: dict[str, list[Any]] = {f.name: [] for f in PARTITION_SCHEMA if f.name != "time"}
    for s in statuses:
        for v in s.partitions:
            judged = is_judged(v)
            columns["cluster"].append(s.cluster)
            columns["group"].append(s.group)
            columns["topic"].append(v.topic)
            columns["partition"].append(v.partition)
            columns["status"].append(v.status.name)
            columns["ok"].append(judged and v.status is Status.OK)
            columns["unknown"].append(not judged)
            columns["complete"].append(v.complete)
            columns["lag"].append(v.current_lag)
            columns["offset"].append(None if v.end is None else v.end.offset)
            columns["lag_seconds"].append(v.lag_seconds)
            columns["exact_lag_seconds"].append(v.exact_lag_seconds)
            columns["reason"].append(v.reason or None)
    rows = len(columns["cluster"])
    return arrow_columns.table({"time": _times(now_ms, rows), **columns}, PARTITION_SCHEMA)


def batch_of(kind: str, table: pa.Table, now_ms: int) -> FiledTable:
    """The cycle's table filed under `kind` (`groups` or `partitions`) and the UTC date of the evaluation."""
    return FiledTable(f"{kind}/{date_folder(_utc(now_ms))}", table)


def _utc(now_ms: int) -> datetime:
    return datetime.fromtimestamp(now_ms / 1000, tz=UTC)


def writer(
    directory: Path, flush_interval_s: float = 60.0, max_bytes: int = 1 << 30, queue_size: int = 1_000_000
) -> TableLog:
    """The Parquet appender for the log under `directory` (group and partition rows, one bound for both)."""
    return TableLog(
        directory,
        subdirs=(GROUPS, PARTITIONS),
        name="lag evaluation log",
        flush_interval_s=flush_interval_s,
        max_bytes=max_bytes,
        queue_size=queue_size,
    )


class StatusSource(Protocol):
    """What a cycle needs from `lag.service.LagService`: the clock, and every group evaluated at a given time."""

    @property
    def clock_ms(self) -> Callable[[], int]: ...

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]: ...


@runtime_checkable
class RowSource(StatusSource, Protocol):
    """A source that also gives a scrape's rows (`lag.service.LagService`): a cycle without partition rows then
    builds objects only for the groups not OK, instead of every group-partition's (docs/benchmarks.md)."""

    def locked(self) -> AbstractContextManager[object]: ...

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]: ...

    def group_statuses(self, cluster: str, groups: Sequence[str], now_ms: int) -> list[GroupStatus]: ...


class EvaluationLog:
    """Every `interval_s` (aligned to the wall clock, so each minute holds the same number of cycles): evaluate every
    group through `source` and offer the rows to `log`. `start` after the sources, `stop` before them."""

    def __init__(
        self,
        source: StatusSource,
        log: ParquetLog[FiledTable],
        interval_s: float = 15.0,
        partitions: bool = False,
        sli_sink: SliPublisher | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self.source = source
        self.log = log
        self.interval_s = interval_s
        self.partitions = partitions
        self.sli_sink = sli_sink
        """Also publishes each cycle's tables to Kafka (`sli_sink`), handed over without waiting."""
        self.cycles: dict[str, int] = {"ok": 0, "failed": 0}
        """Cycles run, by outcome (`failed`: the evaluation raised; logged, and the next cycle runs anyway)."""
        self.last_cycle_ms: int | None = None
        self._loop = Periodic("lag-evaluation-log", interval_s, self._cycle, wall_aligned=True)

    @classmethod
    def from_config(
        cls,
        config: LagEvaluationLogConfig,
        source: StatusSource,
        default_dir: Path,
        sli_sink: SliPublisher | None = None,
    ) -> EvaluationLog:
        directory = config.dir if config.dir is not None else default_dir
        log = writer(directory, config.flush_interval_s, config.max_bytes, config.queue_size)
        return cls(source, log, config.interval_s, config.partitions, sli_sink)

    def run_once(self, now_ms: int | None = None) -> int:
        """Evaluate every group at `now_ms` (default: the source's clock) and offer the rows; the rows accepted."""
        now = self.source.clock_ms() if now_ms is None else now_ms
        if isinstance(self.source, RowSource) and not self.partitions:
            tables = [(GROUPS, rows_group_table(*rows_and_details(self.source, now), now))]
        else:
            statuses = self.source.all_statuses(now)
            tables = [(GROUPS, group_table(statuses, now))]
            if self.partitions:
                tables.append((PARTITIONS, partition_table(statuses, now)))
        accepted = 0
        for kind, table in tables:
            if table.num_rows and self.log.offer(batch_of(kind, table, now)):
                accepted += table.num_rows
            if table.num_rows and self.sli_sink is not None:
                self.sli_sink.offer(GROUPS_STREAM if kind == GROUPS else PARTITIONS_STREAM, table)
        self.last_cycle_ms = now
        self.cycles["ok"] += 1
        return accepted

    def start(self) -> None:
        self.log.start()
        self._loop.start()

    def stop(self) -> None:
        """End the cycles, then write what is queued."""
        self._loop.stop(60)
        self.log.stop()

    def _cycle(self) -> bool:
        """One cycle; a failure is counted in `cycles` and logged here, and the next cycle tries again."""
        try:
            self.run_once()
        except Exception as exc:  # an evaluation bug must not end the log
            self.cycles["failed"] += 1
            _LOG.warning("lag evaluation log: cycle failed: %s: %s", type(exc).__name__, exc)
            return False
        return True


def configure_evaluation_log(
    config: LagEvaluationLogConfig,
    source: StatusSource,
    registry: CollectorRegistry,
    state: Path,
    sli_sink: SliPublisher | None = None,
) -> EvaluationLog | None:
    """The log `lag.evaluation_log` describes (default directory `<state>/sli/lag`), its families registered on
    `registry`, not started yet; None when disabled. With `sli_sink`, its rows are published to Kafka too."""
    if not config.enabled:
        return None
    log = EvaluationLog.from_config(config, source, state / "sli" / "lag", sli_sink)
    registry.register(EvaluationLogCollector(log))
    return log


class EvaluationLogCollector(Collector):
    """The writer's health (`kafka_pulse_lag_evaluation_log_*`, as the canary's log) and the cycles run."""

    PREFIX = "kafka_pulse_lag_evaluation_log"

    def __init__(self, log: EvaluationLog) -> None:
        self.log = log
        self.writer = ParquetLogCollector(log.log, self.PREFIX)

    def collect(self) -> Iterator[Metric]:
        yield from self.writer.collect()
        cycles = CounterMetricFamily(
            f"{self.PREFIX}_cycles",
            "Evaluation cycles run, by result (failed: the evaluation raised).",
            labels=["result"],
        )
        for result, count in sorted(self.log.cycles.items()):
            cycles.add_metric([result], count)
        yield cycles
        if self.log.last_cycle_ms is not None:
            yield GaugeMetricFamily(
                f"{self.PREFIX}_last_cycle_timestamp_seconds",
                "When the latest cycle evaluated.",
                value=self.log.last_cycle_ms / 1000,
            )
