"""glibc's malloc arenas bounded for a long-running command. glibc gives a thread that allocates its own arena, up
to eight per core, and each arena keeps the memory freed into it; `kafka-pulse lag` runs a dozen threads (librdkafka's
per broker and client, ours per loop), so RSS grew with the threads rather than with the data (docs/benchmarks.md).
Applied at the command's start, before its threads exist; an operator's `MALLOC_ARENA_MAX` wins. The same command
points Arrow's memory pool at this bounded malloc (its default, mimalloc, reserves arenas of its own), and leaves
out pyarrow's remote filesystems, which its Parquet writer would load without using them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, MutableMapping
from typing import Any

M_ARENA_MAX = -8
"""`mallopt`'s parameter for the arena bound (glibc's malloc.h)."""
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
"""The variable pyarrow reads, at its pool's first use, to choose its default memory pool."""
ARROW_POOL_FOR_LONG_RUNNING = "system"
"""Arrow's pool for a long-running command: malloc's, under the arena bound. mimalloc's (Arrow's default) kept about
8 MB resident in `kafka-pulse lag` for an evaluation log of 500 groups' rows (docs/benchmarks.md)."""
ARROW_REMOTE_FILESYSTEMS = ("pyarrow._s3fs", "pyarrow._gcsfs", "pyarrow._azurefs", "pyarrow._hdfs")
"""pyarrow's optional remote filesystems: `pyarrow.fs`, which `pyarrow.parquet` imports, loads each one present and
leaves out one whose import fails (a pyarrow built without it). Loading libarrow_s3 alone makes 2.8 MB resident;
the Parquet logs write local files only."""
LONG_RUNNING_ARENAS = 2
"""Arenas for a long-running command: the main one and one its threads share (allocation is a small part of their
work, so the lock they then share costs little)."""


def arenas_wanted(environ: Mapping[str, str], arenas: int = LONG_RUNNING_ARENAS) -> int | None:
    """The bound to apply; None when `MALLOC_ARENA_MAX` is set (glibc read it at start: the operator's choice)."""
    return None if "MALLOC_ARENA_MAX" in environ else arenas


def bound_malloc_arenas(environ: Mapping[str, str], arenas: int = LONG_RUNNING_ARENAS) -> bool:
    """`mallopt(M_ARENA_MAX, arenas)` on the process's C library; False when not applied (the environment sets the
    bound, or the C library has no such setting, as musl's stub)."""
    wanted = arenas_wanted(environ, arenas)
    if wanted is None:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the symbols already loaded: the process's C library
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, wanted))


def arrow_pool_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment to add so that pyarrow, once imported, allocates through malloc; nothing when the operator
    chose a pool (pure)."""
    return {} if ARROW_POOL_VARIABLE in environ else {ARROW_POOL_VARIABLE: ARROW_POOL_FOR_LONG_RUNNING}


def skip_arrow_remote_filesystems(modules: MutableMapping[str, Any]) -> list[str]:
    """Before pyarrow's import, mark its remote filesystems absent in `modules` (`sys.modules`: a None entry makes
    an import of that name fail), so `pyarrow.fs` takes them as not built: 3.4 MB less resident in `kafka-pulse lag`
    with its evaluation log (docs/benchmarks.md). One already imported is left alone; returns the names marked."""
    skipped = [name for name in ARROW_REMOTE_FILESYSTEMS if name not in modules]
    modules.update(dict.fromkeys(skipped))
    return skipped
