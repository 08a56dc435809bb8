"""Compaction of a Parquet log's closed date folders: the minute files of one day (1,440 for a log flushed every
minute) become one file, so a 30-day SLO window is 30 files to open instead of 43,200. Used by `parquet_log.py`.

Crash-safe through a manifest: the merged file is written under a dot-name readers skip, the manifest naming the
inputs is written next, then the inputs are deleted and the merged file renamed into place; a compaction cut short
is finished (or undone, when the merged file was never complete) by `recover` on the next pass, so no row is lost
or counted twice once it is done. An exclusive lock per folder keeps writers that share a directory apart.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

_LOG = logging.getLogger(__name__)

MANIFEST = ".compaction.json"
LOCK = ".compaction.lock"


@dataclass(frozen=True)
class Compacted:
    """What one folder's compaction did."""

    inputs: int
    rows: int
    output: str


@contextmanager
def folder_lock(folder: Path) -> Iterator[bool]:
    """Yields True while this process holds the folder's compaction lock; False when another one does."""
    with open(folder / LOCK, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def chunks(files: Sequence[tuple[str, int]], target_bytes: int) -> list[list[str]]:
    """Consecutive runs (name order = write order) of part files (name, size) to merge, each at most
    `target_bytes` unless one file alone is larger; runs of one file need nothing (pure)."""
    runs: list[list[str]] = []
    run: list[str] = []
    size = 0
    for name, file_size in sorted(files):
        if run and size + file_size > target_bytes:
            runs.append(run)
            run, size = [], 0
        run.append(name)
        size += file_size
    if run:
        runs.append(run)
    return [r for r in runs if len(r) > 1]


def recover(folder: Path) -> None:
    """Finish or undo a compaction that stopped half-way (call with the folder's lock held)."""
    manifest = folder / MANIFEST
    try:
        plan = json.loads(manifest.read_text())
    except FileNotFoundError:  # no compaction under way: a merged file never confirmed by a manifest is litter
        for stray in folder.glob(".*.staged"):
            stray.unlink(missing_ok=True)
        return
    except (OSError, ValueError) as exc:  # a manifest is written by rename: unreadable means a disk problem
        raise OSError(f"{manifest}: unreadable compaction manifest: {exc}") from exc
    staged, final = folder / plan["staged"], folder / plan["output"]
    if staged.exists():  # complete (the manifest follows it): finish
        for name in plan["inputs"]:
            (folder / name).unlink(missing_ok=True)
        os.replace(staged, final)
    elif final.exists():  # renamed already: only the inputs' deletion may be unfinished
        for name in plan["inputs"]:
            (folder / name).unlink(missing_ok=True)
    else:  # cannot happen in order; keep the inputs rather than guess
        _LOG.error("%s: compaction output %s missing; the inputs are kept", folder, plan["output"])
    manifest.unlink()


def compact(folder: Path, inputs: Sequence[str], output: str) -> Compacted | None:
    """Merge the part files `inputs` of `folder` into `output`, one input in memory at a time (call with the lock
    held). None when their schemas differ (a log whose schema changed keeps those files as they are), when one
    is gone (removed by the size bound meanwhile: the next pass sees the new set) or there is nothing to merge."""
    if len(inputs) < 2:
        return None
    try:
        schemas = {pq.read_schema(folder / name) for name in inputs}
    except FileNotFoundError:
        return None
    if len(schemas) != 1:
        _LOG.warning("%s: %d schemas among %d files; they are not compacted", folder, len(schemas), len(inputs))
        return None
    (schema,) = schemas
    staged = f".{output}.staged"
    rows = 0
    try:
        with pq.ParquetWriter(folder / staged, schema, compression="zstd") as writer:
            for name in sorted(inputs):
                table = pq.read_table(folder / name)
                writer.write_table(table)
                rows += table.num_rows
        with open(folder / staged, "rb") as handle:
            os.fsync(handle.fileno())
        plan = {"inputs": sorted(inputs), "staged": staged, "output": output}
        (folder / f"{MANIFEST}.tmp").write_text(json.dumps(plan))
        os.replace(folder / f"{MANIFEST}.tmp", folder / MANIFEST)
    except FileNotFoundError:
        (folder / staged).unlink(missing_ok=True)
        return None
    except BaseException:
        (folder / staged).unlink(missing_ok=True)
        (folder / f"{MANIFEST}.tmp").unlink(missing_ok=True)
        raise
    recover(folder)  # the manifest's own completion path: delete the inputs, rename, drop the manifest
    return Compacted(len(inputs), rows, output)
