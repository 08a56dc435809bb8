"""Compaction of a Parquet log's closed dates (pulse/parquet_log/compaction.py): the minute files of a day become one,
every row kept once; a compaction cut short at any step is finished or undone by the next pass, and readers never
see a row twice meanwhile; another writer holding the folder is left alone. Real files in a temporary directory."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import pulse.parquet_log.compaction as compaction
from pulse.parquet_log import PART_FILE, ParquetLog
from pulse.parquet_log.compaction import MANIFEST, chunks, compact, folder_lock, recover
from pulse.polling import poll

Row = dict[str, Any]


def table_of(rows: Sequence[Row]) -> pa.Table:
    return pa.Table.from_pylist([{"n": r["n"]} for r in rows], schema=pa.schema([("n", pa.int64())]))


def new_log(directory: Path, compact_after_s: float | None = None) -> ParquetLog[Row]:
    """A writer; without `compact_after_s` it never compacts, so the tests choose when that happens."""
    return ParquetLog(
        directory,
        table_of=table_of,
        folder_of=lambda r: f"date={r['date']}",
        flush_interval_s=3600,
        compact_after_s=compact_after_s,
    )


def compactor(directory: Path) -> ParquetLog[Row]:
    """A log never started: its `compact_closed_dates` runs on the test's thread, at the test's `now`."""
    return new_log(directory, compact_after_s=900)


def write(log: ParquetLog[Row], date: str, numbers: range, files: int) -> None:
    """`files` flushes, so `files` part files in the date's folder."""
    for chunk in range(files):
        for n in numbers[chunk::files]:
            assert log.offer({"date": date, "n": n})
        assert log.flush()


def parts(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if PART_FILE.fullmatch(p.name))


def rows(directory: Path) -> list[int]:
    """What a reader (pyarrow, Spark) sees: hidden files (staged output, manifest, lock) are skipped."""
    return sorted(ds.dataset(directory, format="parquet", partitioning="hive").to_table().column("n").to_pylist())


def day_of_three_files(directory: Path) -> Path:
    """A closed date holding rows 0-59 in three part files, as a log wrote them; its folder."""
    log = new_log(directory).start()
    try:
        write(log, "2026-11-20", range(0, 60), files=3)
    finally:
        log.stop()
    return directory / "date=2026-11-20"


@pytest.mark.parametrize(
    ("sizes", "target", "want"),
    [
        ({"a": 10, "b": 10, "c": 10}, 100, [["a", "b", "c"]]),
        ({"a": 60, "b": 60, "c": 10, "d": 10}, 100, [["b", "c", "d"]]),  # a alone: nothing to merge
        ({"a": 500, "b": 10}, 100, []),  # each run of one file
        ({"c": 10, "a": 10, "b": 10}, 20, [["a", "b"]]),  # name order = write order
        ({}, 100, []),
    ],
)
def test_chunks(sizes: dict[str, int], target: int, want: list[list[str]]) -> None:
    assert chunks(list(sizes.items()), target) == want


def test_a_closed_date_becomes_one_file_with_every_row_and_today_is_left(tmp_path: Path) -> None:
    merger = compactor(tmp_path)
    log = new_log(tmp_path).start()
    try:
        write(log, "2026-11-20", range(0, 500), files=5)
        write(log, "2026-11-21", range(500, 530), files=3)
        before = parts(tmp_path / "date=2026-11-20")
        # 00:10 is within compact_after_s (15 min) of the 20th's end: late rows may still land there.
        assert merger.compact_closed_dates(datetime(2026, 11, 21, 0, 10, tzinfo=UTC)) == 0
        assert merger.compact_closed_dates(datetime(2026, 11, 21, 0, 20, tzinfo=UTC)) == 5
    finally:
        log.stop()
    (merged,) = parts(tmp_path / "date=2026-11-20")
    assert merged.split("-")[1] == before[0].split("-")[1]  # sorts where its oldest input did (the size bound)
    assert len(parts(tmp_path / "date=2026-11-21")) == 3
    assert rows(tmp_path) == list(range(530))
    assert merger.stats().files_compacted == 5 and merger.stats().compaction_errors == 0
    assert not (tmp_path / "date=2026-11-20" / MANIFEST).exists()


def test_a_late_file_in_a_compacted_date_is_merged_next_time(tmp_path: Path) -> None:
    merger = compactor(tmp_path)
    log = new_log(tmp_path).start()
    try:
        write(log, "2026-11-20", range(0, 100), files=4)
        assert merger.compact_closed_dates(datetime(2026, 11, 22, tzinfo=UTC)) == 4
        write(log, "2026-11-20", range(100, 110), files=1)
        assert merger.compact_closed_dates(datetime(2026, 11, 22, tzinfo=UTC)) == 2
    finally:
        log.stop()
    assert len(parts(tmp_path / "date=2026-11-20")) == 1 and rows(tmp_path) == list(range(110))


def test_a_compaction_cut_short_after_its_manifest_is_finished_by_the_next_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = day_of_three_files(tmp_path)
    inputs = parts(folder)

    def crash(_: Path) -> None:
        raise KeyboardInterrupt("killed between the manifest and the deletion of the inputs")

    monkeypatch.setattr(compaction, "recover", crash)
    with pytest.raises(KeyboardInterrupt):
        compact(folder, inputs, "part-20261120T000000000000Z-cafe0000-0.parquet")
    monkeypatch.undo()
    assert (folder / MANIFEST).exists() and parts(folder) == inputs
    assert rows(tmp_path) == list(range(60))  # the staged merge is hidden: no row is seen twice meanwhile

    recover(folder)
    assert parts(folder) == ["part-20261120T000000000000Z-cafe0000-0.parquet"] and not (folder / MANIFEST).exists()
    assert rows(tmp_path) == list(range(60))


def test_a_compaction_cut_short_before_its_manifest_is_undone(tmp_path: Path) -> None:
    folder = day_of_three_files(tmp_path)
    inputs = parts(folder)
    pq.write_table(pq.read_table(folder / inputs[0]), folder / ".part-x.parquet.staged")  # half of a merge
    recover(folder)
    assert parts(folder) == inputs and not list(folder.glob(".*.staged"))
    assert rows(tmp_path) == list(range(60))


def test_a_compaction_cut_short_after_the_rename_drops_the_inputs_left(tmp_path: Path) -> None:
    folder = day_of_three_files(tmp_path)
    inputs = parts(folder)
    output = "part-20261120T000000000000Z-cafe0000-9.parquet"
    pq.write_table(pa.concat_tables(pq.read_table(folder / n) for n in inputs), folder / output)
    plan = {"inputs": inputs, "staged": f".{output}.staged", "output": output}
    (folder / MANIFEST).write_text(json.dumps(plan))
    os.unlink(folder / inputs[0])  # the deletion had begun
    recover(folder)
    assert parts(folder) == [output] and rows(tmp_path) == list(range(60))


def test_files_of_two_schemas_are_left_as_they_are(tmp_path: Path) -> None:
    folder = tmp_path / "date=2026-11-20"
    folder.mkdir()
    pq.write_table(pa.table({"n": [1, 2]}), folder / "part-20261120T000000000000Z-aaaa0000-0.parquet")
    pq.write_table(pa.table({"n": [3], "extra": ["x"]}), folder / "part-20261120T000100000000Z-aaaa0000-1.parquet")
    assert compact(folder, parts(folder), "part-20261120T000000000000Z-bbbb0000-0.parquet") is None
    assert len(parts(folder)) == 2


def test_a_folder_another_writer_is_compacting_is_skipped(tmp_path: Path) -> None:
    merger = compactor(tmp_path)
    log = new_log(tmp_path).start()
    try:
        write(log, "2026-11-20", range(0, 30), files=3)
        with folder_lock(tmp_path / "date=2026-11-20") as mine:
            assert mine
            assert merger.compact_closed_dates(datetime(2026, 11, 22, tzinfo=UTC)) == 0
        assert merger.compact_closed_dates(datetime(2026, 11, 22, tzinfo=UTC)) == 3
    finally:
        log.stop()


def test_a_started_log_compacts_the_dates_an_earlier_run_left(tmp_path: Path) -> None:
    """The compactor thread's first pass runs soon after start: a restarted canary merges what its last run left."""
    earlier = new_log(tmp_path).start()
    try:
        write(earlier, "2026-11-20", range(0, 40), files=4)
    finally:
        earlier.stop()
    log = new_log(tmp_path, compact_after_s=900)
    log.compaction_delay_s = 0.0
    log.start()
    try:
        poll(log.stats, lambda stats: stats.files_compacted == 4, 30, "four files compacted")
    finally:
        log.stop()
    assert len(parts(tmp_path / "date=2026-11-20")) == 1 and rows(tmp_path) == list(range(40))


def test_a_malformed_manifest_skips_its_folder_and_the_pass_compacts_the_others(tmp_path: Path) -> None:
    """A manifest holding `[]` raised out of `recover` and ended every pass before any folder was compacted."""
    log = new_log(tmp_path).start()
    try:
        write(log, "2026-11-19", range(0, 30), files=3)
        write(log, "2026-11-20", range(30, 60), files=3)
    finally:
        log.stop()
    bad = tmp_path / "date=2026-11-19"
    (bad / MANIFEST).write_text("[]")
    before = parts(bad)
    merger = compactor(tmp_path)

    assert merger.compact_closed_dates(datetime(2026, 11, 21, 0, 20, tzinfo=UTC)) == 3  # the 20th's three files

    assert parts(bad) == before and (bad / MANIFEST).exists()  # left as it is, for a human to look at
    assert len(parts(tmp_path / "date=2026-11-20")) == 1
    assert rows(tmp_path) == list(range(60))
    assert merger.stats().compaction_errors == 1
