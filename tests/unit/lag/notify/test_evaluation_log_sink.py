"""lag/notify/evaluation_log.py with `sli_sink`: each cycle's group (and partition) table is handed to the SLI sink
as the Parquet log gets it, under the lag streams' names and versions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from lag.notify.evaluation_log import (
    GROUP_SCHEMA,
    GROUPS_STREAM,
    PARTITION_SCHEMA,
    PARTITIONS_STREAM,
    EvaluationLog,
    group_table,
    partition_table,
    writer,
)
from lag.protocol import GroupStatus
from pulse.sli_sink import Stream
from tests.unit.lag.notify.test_evaluation_log import GROUP_ERR, GROUP_OK, GROUP_UNKNOWN


class Published:
    """An `SliPublisher` that keeps what it is handed."""

    def __init__(self) -> None:
        self.offered: list[tuple[Stream, pa.Table]] = []

    def offer(self, stream: Stream, table: pa.Table) -> bool:
        self.offered.append((stream, table))
        return True


class NoGroups:
    def __init__(self, statuses: list[GroupStatus]) -> None:
        self.statuses = statuses

    @property
    def clock_ms(self) -> Callable[[], int]:
        return lambda: 1_764_374_400_000

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]:
        return self.statuses


def test_streams_carry_the_parquet_schemas() -> None:
    assert (GROUPS_STREAM.name, GROUPS_STREAM.version, GROUPS_STREAM.schema) == ("lag-groups", 1, GROUP_SCHEMA)
    assert (PARTITIONS_STREAM.name, PARTITIONS_STREAM.schema) == ("lag-partitions", PARTITION_SCHEMA)


def test_an_empty_cycle_publishes_nothing(tmp_path: Path) -> None:
    published = Published()
    log = EvaluationLog(NoGroups([]), writer(tmp_path), partitions=True, sli_sink=published)
    assert log.run_once() == 0
    assert published.offered == []


def test_a_cycle_publishes_the_tables_the_parquet_log_gets(tmp_path: Path) -> None:
    published = Published()
    statuses = [GROUP_OK, GROUP_ERR, GROUP_UNKNOWN]
    log = EvaluationLog(NoGroups(statuses), writer(tmp_path), partitions=True, sli_sink=published)
    now = 1_764_374_400_000
    log.run_once(now)
    assert [(s.name, t.num_rows) for s, t in published.offered] == [("lag-groups", 3), ("lag-partitions", 4)]
    assert published.offered[0][1].equals(group_table(statuses, now))
    assert published.offered[1][1].equals(partition_table(statuses, now))
