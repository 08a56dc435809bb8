"""The evaluation log's group rows from one columnar pass (`rows_group_table`: an OK group read off a scrape's
arrays, objects only for the others) are the rows `group_table` builds from every group's objects
(`LagService.all_statuses`), on the store the /metrics equality tests use: every status, NOTFOUND (expired) and
UNKNOWN (cluster down) groups, placeholders, ties on the largest lag, time lags, exact time lags and page-cache
facts; in every rule set, and again after groups come and go. And a cycle of a service takes that path."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from lag.notify.evaluation_log import (
    GROUPS,
    PARTITIONING,
    EvaluationLog,
    RowSource,
    group_table,
    rows_and_details,
    rows_group_table,
    writer,
)
from lag.protocol import MODES, ClusterRows, GroupStatus, Mode, Status
from lag.service import LagService
from pulse.config import LagConfig
from tests.unit.lag.serve.test_text_families import NOW, build


def both(objects: LagService, rows: LagService) -> tuple[pa.Table, pa.Table]:
    """The group table of the objects of every group of one service, and the one from the rows of the other, an equal
    store: each pass purges the expired groups it reports NOTFOUND."""
    want = group_table(objects.all_statuses(NOW), NOW)
    got = rows_group_table(*rows_and_details(rows, NOW), NOW)
    return want, got


@pytest.mark.parametrize("mode", MODES)
def test_rows_from_the_columnar_pass_equal_the_rows_of_every_groups_objects(mode: Mode) -> None:
    want, got = both(build(mode, groups=300), build(mode, groups=300))
    assert got.equals(want), _first_difference(want, got)
    statuses = set(want.column("status").to_pylist())
    assert {"OK", "UNKNOWN", "NOTFOUND"} <= statuses and statuses & {"WARN", "ERR"}  # every kind of row is compared
    assert want.num_rows > 2 * 300  # three clusters of 300 groups, less the few that never committed


def test_the_rows_stay_equal_after_groups_come_and_go() -> None:
    services = build("enhanced", groups=200), build("enhanced", groups=200)
    both(*services)  # the expired groups are purged by the first pass
    for service in services:
        store = service.store
        for group in store.groups("prod")[::5]:
            store.delete_group("prod", group)
        for topic in store.hwms.topics("prod")[::7]:
            store.delete_topic("prod", topic)
        for g in range(30):
            store.add_commit("prod", f"new-{g:03d}", store.hwms.topics("prod")[0], 0, 5, NOW - 1000, NOW)
    want, got = both(*services)
    assert got.equals(want), _first_difference(want, got)


def test_only_the_groups_not_ok_are_built_as_objects() -> None:
    service = build("burrow-1.2", groups=200)
    rows, detailed = rows_and_details(service, NOW)
    codes = [code for r in rows for code in r.status.tolist()]
    assert len(detailed) == sum(code != int(Status.OK) for code in codes) < len(codes)
    assert all(s.status is not Status.OK for s in detailed)


def test_a_group_without_partitions_is_a_row_without_maxlag() -> None:
    """An OK group none of whose runs has partitions left (its topic deleted): no maxlag, nothing complete."""
    services = LagService(LagConfig(), clock_ms=lambda: NOW), LagService(LagConfig(), clock_ms=lambda: NOW)
    for service in services:
        store = service.store
        store.add_hwm("c", "t", 0, 100, NOW - 1000)
        store.add_hwm("c", "u", 0, 100, NOW - 1000)
        store.add_commit("c", "g", "t", 0, 90, NOW - 1000, NOW)
        store.add_commit("c", "h", "u", 0, 90, NOW - 1000, NOW)
        store.delete_topic("c", "u")
    want, got = both(*services)
    assert want.column("group").to_pylist() == ["g", "h"]  # h is kept, without partitions
    assert got.equals(want), _first_difference(want, got)


class Counting(LagService):
    """A service that counts the objects a cycle asked for."""

    all_calls = 0
    scrapes = 0

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]:
        self.all_calls += 1
        return super().all_statuses(now_ms)

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]:
        self.scrapes += 1
        return super().scrape_rows(now_ms)


def test_a_cycle_reads_rows_without_partition_rows_and_objects_with_them(tmp_path: Path) -> None:
    service = Counting(LagConfig(), clock_ms=lambda: NOW)
    service.store.add_hwm("c", "t", 0, 100, NOW - 1000)
    service.store.add_commit("c", "g", "t", 0, 90, NOW - 1000, NOW)
    assert isinstance(service, RowSource)
    EvaluationLog(service, writer(tmp_path / "a")).run_once(NOW)
    assert (service.scrapes, service.all_calls) == (1, 0)
    EvaluationLog(service, writer(tmp_path / "b"), partitions=True).run_once(NOW)
    assert (service.scrapes, service.all_calls) == (1, 1)


def test_a_cycle_from_rows_writes_what_the_objects_give(tmp_path: Path) -> None:
    service = build("enhanced", groups=50)
    want = group_table(build("enhanced", groups=50).all_statuses(NOW), NOW)
    log = EvaluationLog(service, writer(tmp_path, flush_interval_s=0.1))
    log.log.start()
    assert log.run_once(NOW) == want.num_rows
    log.log.stop()
    written = ds.dataset(tmp_path / GROUPS, format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive"))
    table = written.to_table(columns=want.column_names)
    assert table.sort_by([("cluster", "ascending"), ("group", "ascending")]).equals(
        want.sort_by([("cluster", "ascending"), ("group", "ascending")])
    )


def _first_difference(want: pa.Table, got: pa.Table) -> str:
    """The first row that differs, for the assertion's message."""
    if want.num_rows != got.num_rows:
        return f"{want.num_rows} rows wanted, {got.num_rows} got"
    for i, (a, b) in enumerate(zip(want.to_pylist(), got.to_pylist(), strict=True)):
        if a != b:
            return f"row {i}: wanted {a}, got {b}"
    return f"schemas: {want.schema} / {got.schema}"
