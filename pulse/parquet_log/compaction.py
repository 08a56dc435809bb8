"""Compaction of a Parquet log's closed date folders: the minute files of one day (1,440 for a log flushed every
minute) become one file, so a 30-day SLO window is 30 files to open instead of 43,200. Used by `writer.py`.

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
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from pulse.private_files import LOCK as LOCK_FLAGS
from pulse.private_files import READ, WRITE_NEW, open_private

_LOG = logging.getLogger(__name__)

MANIFEST = ".compaction.json"
LOCK = ".compaction.lock"
PART_FILE = re.compile(r"part-\d{8}T\d{12}Z-[0-9a-f]+-\d+\.parquet")
"""Names of the files a log writes (and the only ones its bound removes or a manifest may name):
`part-<UTC write time>-<writer>-<n>`."""
MAX_MANIFEST_BYTES = 1 << 20
"""A manifest lists at most a day's minute files (~80 KB); anything larger is not one of ours."""


class BadManifest(ValueError):
    """A manifest that is not one `compact` wrote: the folder is left as it is (nothing deleted or renamed)."""


@dataclass(frozen=True)
class Plan:
    """A manifest's content, every name checked to be a bare part-file name of this folder."""

    inputs: tuple[str, ...]
    staged: str
    output: str


def parse_manifest(text: str) -> Plan:
    """The plan a manifest holds; BadManifest unless it is exactly what `compact` writes (pure): an object with
    `inputs` (part-file names), `output` (a part-file name) and `staged` (`.<output>.staged`)."""
    try:
        plan = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadManifest(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(plan, dict) or set(plan) != {"inputs", "staged", "output"}:
        raise BadManifest('not an object with exactly "inputs", "staged" and "output"')
    inputs, staged, output = plan["inputs"], plan["staged"], plan["output"]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(n, str) for n in inputs):
        raise BadManifest('"inputs" is not a non-empty list of names')
    if not isinstance(output, str) or not PART_FILE.fullmatch(output):
        raise BadManifest(f'"output" {str(output)[:80]!r} is not a part-file name')
    for name in inputs:
        if not PART_FILE.fullmatch(name):
            raise BadManifest(f'"inputs" holds {name[:80]!r}, not a part-file name')
    if staged != f".{output}.staged":
        raise BadManifest(f'"staged" {str(staged)[:80]!r} is not ".{output}.staged"')
    return Plan(tuple(inputs), staged, output)


@dataclass(frozen=True)
class Compacted:
    """What one folder's compaction did."""

    inputs: int
    rows: int
    output: str


@contextmanager
def folder_lock(folder: Path) -> Iterator[bool]:
    """Yields True while this process holds the folder's compaction lock; False when another one does."""
    fd = open_private(folder / LOCK, LOCK_FLAGS)  # 0600, never through a symlink
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


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


def read_manifest(folder: Path) -> Plan | None:
    """The folder's manifest (None when there is none); BadManifest when it is not one `compact` wrote, OSError
    when it cannot be read (a symlink is not followed)."""
    try:
        fd = open_private(folder / MANIFEST, READ)
    except FileNotFoundError:
        return None
    try:
        data = os.read(fd, MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_MANIFEST_BYTES:
        raise BadManifest(f"larger than {MAX_MANIFEST_BYTES} bytes")
    return parse_manifest(data.decode("utf-8", errors="replace"))


def recover(folder: Path) -> bool:
    """Finish or undo a compaction that stopped half-way (call with the folder's lock held). False when the
    folder's manifest is unreadable or malformed: it is logged and the folder left untouched (not compacted),
    since which files it merged cannot be known; nothing outside the folder is ever touched."""
    manifest = folder / MANIFEST
    try:
        plan = read_manifest(folder)
    except (OSError, BadManifest) as exc:
        _LOG.error("%s: unreadable compaction manifest (%s); the folder is left as it is", manifest, exc)
        return False
    if plan is None:  # no compaction under way: a merged file never confirmed by a manifest is litter
        for stray in folder.glob(".*.staged"):
            stray.unlink(missing_ok=True)
        return True
    staged, final = folder / plan.staged, folder / plan.output
    if staged.exists():  # complete (the manifest follows it): finish
        for name in plan.inputs:
            (folder / name).unlink(missing_ok=True)
        os.replace(staged, final)
    elif final.exists():  # renamed already: only the inputs' deletion may be unfinished
        for name in plan.inputs:
            (folder / name).unlink(missing_ok=True)
    else:  # cannot happen in order; keep the inputs rather than guess
        _LOG.error("%s: compaction output %s missing; the inputs are kept", folder, plan.output)
    manifest.unlink()
    return True


def compact(folder: Path, inputs: Sequence[str], output: str) -> Compacted | None:
    """Merge the part files `inputs` of `folder` into `output`, one input in memory at a time (call with the lock
    held). None when their schemas differ (a log whose schema changed keeps those files as they are), when one
    is gone (removed by the size bound meanwhile: the next pass sees the new set) or there is nothing to merge."""
    if len(inputs) < 2:
        return None
    if not PART_FILE.fullmatch(output) or not all(PART_FILE.fullmatch(n) for n in inputs):
        raise ValueError(f"{folder}: compaction takes part-file names only, got {[*inputs, output]!r}")
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
        with (
            os.fdopen(open_private(folder / staged, WRITE_NEW), "wb") as sink,
            pq.ParquetWriter(sink, schema, compression="zstd") as writer,
        ):
            for name in sorted(inputs):
                with pq.ParquetFile(folder / name) as part:  # not `read_table`: it imports pandas (~50 MB)
                    table = part.read()
                writer.write_table(table)
                rows += table.num_rows
            writer.close()
            sink.flush()
            os.fsync(sink.fileno())
        plan = {"inputs": sorted(inputs), "staged": staged, "output": output}
        fd = open_private(folder / f"{MANIFEST}.tmp", WRITE_NEW)
        try:
            os.write(fd, json.dumps(plan).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
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
