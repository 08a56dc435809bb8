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

from pulse.alerts import Alert, AlertSink, AlertSpool
from pulse.alerts.spool import LOCK_FILE, SPOOL_FILE
from pulse.parquet_log import ParquetLog
from pulse.ports import free_ports
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


def test_directories_above_ours_keep_the_mode_their_owner_chose(tmp_path: Path) -> None:
    chosen = tmp_path / "shared"
    chosen.mkdir(mode=0o750)
    os.chmod(chosen, 0o750)
    make_private_dir(chosen / "mine")
    assert (mode(chosen), mode(chosen / "mine")) == (0o750, 0o700)


def test_an_existing_loose_spool_directory_of_ours_is_tightened_to_0700(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "alert-spool"
    directory.mkdir()
    os.chmod(directory, 0o755)
    AlertSpool(directory, max_bytes=1 << 20).append([Alert(labels={"alertname": "A"})], T0)
    assert mode(directory) == 0o700
    assert f"{directory} was mode 0755: tightened to 0700" in caplog.text


def test_a_parquet_logs_existing_root_and_date_folder_are_tightened(tmp_path: Path) -> None:
    root, folder = tmp_path / "sli", tmp_path / "sli" / "groups" / "date=2026-03-01"
    folder.mkdir(parents=True)
    for loose in (root, root / "groups", folder):
        os.chmod(loose, 0o775)
    log: ParquetLog[dict[str, Any]] = ParquetLog(
        root,
        table_of=lambda rows: pa.Table.from_pylist(list(rows)),
        folder_of=lambda _: "groups/date=2026-03-01",
        compact_after_s=None,
    )
    log.start()
    log.offer({"n": 1})
    assert log.flush()
    log.stop()
    assert (mode(tmp_path), mode(root), mode(root / "groups"), mode(folder)) == (mode(tmp_path), 0o700, 0o700, 0o700)


def foreign_loose_dir(tmp_path: Path) -> Path:
    """A 0755 directory owned by another user: made with chown as root, else /tmp (root's, 1777)."""
    if os.geteuid() != 0:
        return Path("/tmp")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chmod(foreign, 0o755)
    os.chown(foreign, 65534, 65534)
    return foreign


def test_a_loose_directory_owned_by_someone_else_is_refused_naming_it_its_mode_and_owner(tmp_path: Path) -> None:
    foreign = foreign_loose_dir(tmp_path)
    before = os.stat(foreign)
    with pytest.raises(PermissionError) as raised:
        make_private_dir(foreign)
    message = str(raised.value)
    assert str(foreign) in message
    assert f"mode {stat.S_IMODE(before.st_mode):04o} and owned by uid {before.st_uid}" in message
    assert "chmod it 0700" in message
    assert os.stat(foreign).st_mode == before.st_mode  # untouched


def test_a_sink_whose_spool_directory_is_foreign_and_loose_posts_live_and_counts_it(tmp_path: Path) -> None:
    foreign = foreign_loose_dir(tmp_path)
    assert foreign != Path("/tmp"), "needs root to make a foreign directory it could write into"
    down = f"http://127.0.0.1:{free_ports(1)[0]}"  # nothing listens: the alert cannot go live either
    with AlertSink(down, foreign, timeout_s=1) as sink:
        result = sink.send([Alert(labels={"alertname": "A"})])
    assert (result.delivered, sink.stats.spool_errors, sink.stats.dropped["spool_error"]) == (0, 2, 1)
    assert not (foreign / SPOOL_FILE).exists()
