"""File modes of what kafka-pulse keeps on disk (pulse/private_files.py): the alert spool and the Parquet logs are
0600 in 0700 directories whatever the umask, and a symlink planted at their paths is refused, never followed."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pulse.alert_spool import LOCK_FILE, SPOOL_FILE
from pulse.alerts import Alert, AlertSpool
from pulse.parquet_log import ParquetLog
from pulse.private_files import make_private_dir, open_private

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """The worst case: a umask that would leave new files world-readable."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_spool_is_0600_in_a_0700_directory_made_with_its_parents(tmp_path: Path) -> None:
    directory = tmp_path / "state" / "alert-spool"
    spool = AlertSpool(directory, max_bytes=1 << 20)
    with spool.locked():
        spool.append([Alert(labels={"alertname": "A", "slo": "a"})], T0)
        spool.replace([Alert(labels={"alertname": "A", "slo": "b"})], T0)  # the rewrite's temp file, renamed

    assert (mode(tmp_path / "state"), mode(directory)) == (0o700, 0o700)
    assert (mode(directory / SPOOL_FILE), mode(directory / LOCK_FILE)) == (0o600, 0o600)
    assert sorted(p.name for p in directory.iterdir()) == [SPOOL_FILE, LOCK_FILE]  # no temp file left


def test_an_existing_spool_file_of_an_older_version_is_tightened_at_the_next_append(tmp_path: Path) -> None:
    (tmp_path / SPOOL_FILE).touch(mode=0o644)
    os.chmod(tmp_path / SPOOL_FILE, 0o644)
    AlertSpool(tmp_path, max_bytes=1 << 20).append([Alert(labels={"alertname": "A"})], T0)
    assert mode(tmp_path / SPOOL_FILE) == 0o600


def test_parquet_log_files_are_0600_in_0700_folders(tmp_path: Path) -> None:
    def table_of(rows: Sequence[dict[str, Any]]) -> pa.Table:
        return pa.Table.from_pylist(list(rows))

    log: ParquetLog[dict[str, Any]] = ParquetLog(
        tmp_path / "sli", table_of=table_of, folder_of=lambda _: "date=2026-03-01", compact_after_s=None
    )
    log.start()
    log.offer({"n": 1})
    assert log.flush()
    log.stop()

    folder = tmp_path / "sli" / "date=2026-03-01"
    (part,) = folder.iterdir()
    assert (mode(tmp_path / "sli"), mode(folder), mode(part)) == (0o700, 0o700, 0o600)
    assert log.stats().rows_written == 1


def test_a_symlink_at_a_private_path_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        open_private(tmp_path / "link", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    assert victim.read_text() == "keep"


def test_an_existing_directory_keeps_the_mode_its_owner_chose(tmp_path: Path) -> None:
    chosen = tmp_path / "shared"
    chosen.mkdir(mode=0o750)
    os.chmod(chosen, 0o750)
    make_private_dir(chosen / "mine")
    assert (mode(chosen), mode(chosen / "mine")) == (0o750, 0o700)


def test_the_compaction_lock_is_0600_and_never_a_symlink(tmp_path: Path) -> None:
    from pulse.parquet_compaction import LOCK, folder_lock

    with folder_lock(tmp_path) as mine:
        assert mine
    assert mode(tmp_path / LOCK) == 0o600

    (tmp_path / LOCK).unlink()
    (tmp_path / LOCK).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="Too many levels of symbolic links"), folder_lock(tmp_path):
        pass
    assert not (tmp_path / "elsewhere").exists()
