"""Files only kafka-pulse's own user may read: the alert spool and the Parquet logs hold alert texts and SLI rows.

Directories are created 0700 and files 0600 whatever the umask, every open uses `O_NOFOLLOW` (a symlink planted
at a spool or log path is refused, not followed) and `O_CLOEXEC`. A directory of ours that already exists with a
looser mode (an older version's 0755, a hand-made one) is tightened to 0700 when kafka-pulse's user
owns it and refused otherwise (docs/security.md).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

_LOG = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600

Opener = Callable[[str, int, int], int]
"""`os.open`'s shape (path, flags, mode) -> fd: the seam a fault test replaces to inject ENOSPC or EROFS."""

WRITE_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
APPEND = os.O_RDWR | os.O_CREAT | os.O_APPEND
READ = os.O_RDONLY
LOCK = os.O_RDWR | os.O_CREAT


def make_private_dir(path: Path, top: Path | None = None) -> None:
    """Create `path` and its missing parents 0700, and make the directories from `top` (default: `path` itself)
    down to `path` private: one that group or others may use is tightened to 0700 if our user owns it, else
    refused with PermissionError naming it, its mode and owner. Directories above `top` are the operator's."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for created in missing:  # mkdir's mode passes through the umask; the parents' through nothing
        os.chmod(created, DIR_MODE, follow_symlinks=False)
    ours = [path]
    if top is not None and top != path and top in path.parents:
        ours += [p for p in path.parents if p == top or top in p.parents]
    for directory in ours:
        if directory not in missing:
            tighten_dir(directory)


def tighten_dir(path: Path) -> None:
    """Make an existing directory 0700 if group or others have any access to it and our user owns it; refuse a
    loose one owned by someone else (chmod would fail, and writing there would show our files to others)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        loose = stat.S_IMODE(info.st_mode)
        if not loose & 0o077:
            return
        if info.st_uid != os.geteuid():
            raise PermissionError(
                errno.EPERM,
                f"private directory is mode {loose:04o} and owned by uid {info.st_uid}, not by kafka-pulse's user "
                f"(uid {os.geteuid()}): others could read what kafka-pulse writes there; chown it to uid "
                f"{os.geteuid()} or chmod it 0700",
                str(path),
            )
        os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)
    _LOG.warning("%s was mode %04o: tightened to %04o (it holds kafka-pulse's private files)", path, loose, DIR_MODE)


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
