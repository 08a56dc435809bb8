"""Files only kafka-pulse's own user may read: the alert spool and the Parquet logs hold alert texts and SLI rows.

Directories are created 0700 and files 0600 whatever the umask, every open uses `O_NOFOLLOW` (a symlink planted
at a spool or log path is refused, not followed) and `O_CLOEXEC`. An existing directory keeps its mode: it was
chosen by whoever created it (docs/security.md).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600

Opener = Callable[[str, int, int], int]
"""`os.open`'s shape (path, flags, mode) -> fd: the seam a fault test replaces to inject ENOSPC or EROFS."""

WRITE_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
APPEND = os.O_RDWR | os.O_CREAT | os.O_APPEND
READ = os.O_RDONLY
LOCK = os.O_RDWR | os.O_CREAT


def make_private_dir(path: Path) -> None:
    """Create `path` and its missing parents 0700; an existing directory is left as it is."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for created in missing:  # mkdir's mode passes through the umask; the parents' through nothing
        os.chmod(created, DIR_MODE, follow_symlinks=False)


def open_private(path: Path, flags: int, opener: Opener = os.open) -> int:
    """A file descriptor for `path` opened with `flags` plus O_NOFOLLOW and O_CLOEXEC; a file it creates is 0600
    (also under a permissive umask: the mode is set on the descriptor). Only a regular file is accepted: a FIFO or
    device planted at the path is refused with OSError (opened O_NONBLOCK, so a FIFO cannot hang the open)."""
    fd = opener(str(path), flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, FILE_MODE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        if flags & os.O_CREAT:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd
