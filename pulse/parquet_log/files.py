"""A Parquet log's files on disk: the hive `date=YYYY-MM-DD` folders, listing the part files in them, and removing
the oldest to keep the log under its byte bound."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pulse.parquet_log.compaction import PART_FILE

_LOG = logging.getLogger(__name__)

DATE_DIR = re.compile(r"date=\d{4}-\d{2}-\d{2}")


def files_to_remove(files: Sequence[tuple[str, int]], max_bytes: int) -> list[str]:
    """Which part files (name, size) to delete, oldest first, so that the rest fit in `max_bytes` (pure).
    Names start with their UTC write time, so name order is write order."""
    total = sum(size for _, size in files)
    doomed: list[str] = []
    for name, size in sorted(files):
        if total <= max_bytes:
            break
        doomed.append(name)
        total -= size
    return doomed


def date_folder(moment: datetime) -> str:
    """The hive folder of a UTC date: `date=YYYY-MM-DD`."""
    return "date=" + moment.astimezone(UTC).strftime("%Y-%m-%d")


def part_files(directory: Path, subdirs: Sequence[str]) -> Iterator[tuple[str, Path, int]]:
    """The part files in the `date=` folders under each of `subdirs` of `directory`, with their sizes."""
    for subdir in subdirs:
        try:
            folders = [d for d in os.scandir(directory / subdir) if d.is_dir() and DATE_DIR.fullmatch(d.name)]
        except OSError:
            continue
        for folder in folders:
            try:
                entries = list(os.scandir(folder.path))
            except OSError:
                continue
            for entry in entries:
                if PART_FILE.fullmatch(entry.name):
                    try:
                        yield entry.name, Path(entry.path), entry.stat().st_size
                    except FileNotFoundError:  # removed by another writer sharing the directory
                        continue


def remove_oldest(files: Iterable[tuple[str, Path, int]], max_bytes: int, log_name: str) -> tuple[int, int, int]:
    """Delete the oldest of `files` (name, path, size) until the rest fit `max_bytes`; returns the files and bytes
    removed and the bytes left. A file that cannot be removed is logged (naming `log_name`) and kept."""
    by_name = {name: (path, size) for name, path, size in files}
    removed = removed_bytes = 0
    for name in files_to_remove([(n, s) for n, (_, s) in by_name.items()], max_bytes):
        path, size = by_name.pop(name)
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            _LOG.warning("%s: cannot remove %s to stay under max_bytes: %s", log_name, path, exc)
            continue
        removed, removed_bytes = removed + 1, removed_bytes + size
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only succeeds once the folder holds nothing else
    return removed, removed_bytes, sum(size for _, size in by_name.values())
