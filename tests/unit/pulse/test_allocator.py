"""glibc's malloc arenas bounded (pulse/allocator.py, #27): threads started after the bound share its arenas, and an
operator's `MALLOC_ARENA_MAX` is left to glibc; Arrow's pool is pointed at that malloc unless the operator chose one;
pyarrow's remote filesystems are left out while its Parquet files are written and read as before. Each case runs in
a fresh interpreter, whose arenas (and pyarrow's pool) are its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pulse.allocator import (
    ARROW_POOL_VARIABLE,
    ARROW_REMOTE_FILESYSTEMS,
    LONG_RUNNING_ARENAS,
    arenas_wanted,
    arrow_pool_settings,
    skip_arrow_remote_filesystems,
)

ARENAS_AFTER_THREADS = """
import ctypes, os, sys, threading
from pulse.allocator import bound_malloc_arenas
applied = bound_malloc_arenas(os.environ) if sys.argv[1] == "bound" else None
ready, done, held = threading.Barrier(9), threading.Event(), []
def allocate():
    held.append(bytearray(100_000))  # past pymalloc, under the mmap threshold: from the thread's arena
    ready.wait()
    done.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads:
    t.start()
ready.wait()
sys.stderr.flush()
ctypes.CDLL(None).malloc_stats()  # glibc: an "Arena N:" block per arena, on stderr
done.set()
for t in threads:
    t.join()
print(applied)
"""


def arenas_used(mode: str, env: dict[str, str]) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_AFTER_THREADS, mode], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), sum(line.startswith("Arena ") for line in done.stderr.splitlines())


@pytest.fixture
def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}


@pytest.mark.parametrize(
    ("environ", "want"),
    [
        pytest.param({}, LONG_RUNNING_ARENAS, id="default-bound"),
        pytest.param({"MALLOC_ARENA_MAX": "4"}, None, id="operator-choice-wins"),
        pytest.param({"MALLOC_ARENA_MAX": ""}, None, id="set-even-empty"),
    ],
)
def test_the_bound_applied_unless_the_environment_sets_one(environ: dict[str, str], want: int | None) -> None:
    assert arenas_wanted(environ) == want


def test_threads_started_after_the_bound_share_its_arenas(env: dict[str, str]) -> None:
    unbounded = arenas_used("free", env)
    bounded = arenas_used("bound", env)
    assert unbounded[1] > LONG_RUNNING_ARENAS  # the case can fail: eight threads get arenas of their own
    assert bounded == ("True", LONG_RUNNING_ARENAS)


def test_an_operators_bound_is_left_as_glibc_read_it(env: dict[str, str]) -> None:
    applied, arenas = arenas_used("bound", {**env, "MALLOC_ARENA_MAX": "3"})
    assert (applied, arenas) == ("False", 3)


@pytest.mark.parametrize(
    ("environ", "want"),
    [
        pytest.param({}, {ARROW_POOL_VARIABLE: "system"}, id="default-malloc"),
        pytest.param({ARROW_POOL_VARIABLE: "jemalloc"}, {}, id="operator-choice-wins"),
    ],
)
def test_arrows_pool_is_malloc_unless_the_environment_names_one(environ: dict[str, str], want: dict[str, str]) -> None:
    assert arrow_pool_settings(environ) == want


ARROW_POOL_AFTER_SETTINGS = """
import os, sys
from pulse.allocator import arrow_pool_settings
if sys.argv[1] == "set":
    os.environ.update(arrow_pool_settings(os.environ))
import pyarrow
print(pyarrow.default_memory_pool().backend_name)
"""


def arrow_pool(mode: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", ARROW_POOL_AFTER_SETTINGS, mode], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pyarrow_imported_after_the_settings_allocates_through_malloc() -> None:
    env = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE}
    assert arrow_pool("unset", env) != "system"  # the case can fail: pyarrow's own default is another allocator
    assert arrow_pool("set", env) == "system"


def test_remote_filesystems_marked_absent_unless_already_imported() -> None:
    loaded = ModuleType("pyarrow._s3fs")
    modules: dict[str, ModuleType | None] = {"pyarrow._s3fs": loaded}
    assert skip_arrow_remote_filesystems(modules) == list(ARROW_REMOTE_FILESYSTEMS[1:])
    assert modules == {"pyarrow._s3fs": loaded, **dict.fromkeys(ARROW_REMOTE_FILESYSTEMS[1:])}


PARQUET_AFTER_SKIP = """
import io, sys
from pulse.allocator import skip_arrow_remote_filesystems
if sys.argv[1] == "skip":
    skip_arrow_remote_filesystems(sys.modules)
import pyarrow as pa, pyarrow.fs, pyarrow.parquet as pq
table = pa.table({"group": ["g1", None], "lag": pa.array([3, 4], pa.int64())})
sink = io.BytesIO()
with pq.ParquetWriter(sink, table.schema, compression="zstd") as writer:  # as the log's compaction writes
    writer.write_table(table)
pq.write_table(table, sys.argv[2], compression="zstd")  # as the log's writer does
assert pq.ParquetFile(io.BytesIO(sink.getvalue())).read().equals(table)
assert pq.ParquetFile(sys.argv[2]).read().equals(table) and pq.read_schema(sys.argv[2]) == table.schema
with open("/proc/self/maps") as maps:
    print("libarrow_s3" in maps.read(), hasattr(pyarrow.fs, "LocalFileSystem"))
"""


def test_parquet_written_and_read_without_the_remote_filesystems(tmp_path: Path) -> None:
    def run(mode: str) -> str:
        args = [sys.executable, "-c", PARQUET_AFTER_SKIP, mode, str(tmp_path / f"{mode}.parquet")]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("import") == "True True"  # the case can fail: pyarrow.fs loads S3's library
    assert run("skip") == "False True"
