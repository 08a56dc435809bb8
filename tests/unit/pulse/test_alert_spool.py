"""pulse/alerts/spool.py under a failing disk: a write that fails (ENOSPC injected, a temp file that cannot be made,
a directory gone) leaves the file, its entry count and the directory true (no half line, no .tmp)."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pulse.alerts import Alert, AlertSpool
from pulse.alerts.spool import LOCK_FILE, SPOOL_FILE

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def alert(slo: str) -> Alert:
    return Alert(labels={"alertname": "KafkaSLOBurnRate", "slo": slo})


def test_enospc_leaves_the_file_its_entry_count_and_no_temp_file(tmp_path: Path) -> None:
    """ENOSPC injected where the spool opens a file to write (a real full disk at the write itself is
    tests/integration/pulse/test_alert_path_faults.py's 64 KiB tmpfs)."""
    full = [False]

    def opener(path: str, flags: int, mode: int) -> int:
        writing = flags & (os.O_WRONLY | os.O_RDWR)
        if full[0] and writing and path.endswith((SPOOL_FILE, ".tmp")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return os.open(path, flags, mode)

    spool = AlertSpool(tmp_path, max_bytes=1 << 20, opener=opener)
    with spool.locked():
        spool.append([alert("kept")], T0)
        before = (tmp_path / SPOOL_FILE).read_bytes()
        full[0] = True
        with pytest.raises(OSError) as appended:
            spool.append([alert("lost")], T0)
        with pytest.raises(OSError) as rewritten:
            spool.replace([alert("lost")], T0)
        full[0] = False

        assert appended.value.errno == rewritten.value.errno == errno.ENOSPC
        assert spool.entries == 1
        assert (tmp_path / SPOOL_FILE).read_bytes() == before
        assert [a.labels["slo"] for a in spool.read().alerts] == ["kept"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [SPOOL_FILE, LOCK_FILE]


def test_a_failed_rewrite_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    spool = AlertSpool(tmp_path, max_bytes=1 << 20)
    with spool.locked():
        spool.append([alert("a"), alert("b")], T0)
        (tmp_path / "alerts.tmp").mkdir()  # the temp file cannot be created: the rewrite fails before the rename
        with pytest.raises(OSError):
            spool.replace([alert("b")], T0)
        (tmp_path / "alerts.tmp").rmdir()
        assert spool.entries == 2
        assert [a.labels["slo"] for a in spool.read().alerts] == ["a", "b"]


def test_a_removed_directory_is_re_created_at_the_next_write(tmp_path: Path) -> None:
    directory = tmp_path / "spool"
    spool = AlertSpool(directory, max_bytes=1 << 20)
    directory.rmdir()
    with spool.locked():
        spool.append([alert("a")], T0)
    assert [a.labels["slo"] for a in spool.read().alerts] == ["a"]
