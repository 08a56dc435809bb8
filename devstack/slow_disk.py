"""A slow log directory for one dev broker: a FUSE pass-through (fusepy over libfuse 2) that forwards every call to
a backing directory and sleeps before each write and fsync, so the broker's appends and flushes take that long, as
on a degraded disk. Needs /dev/fuse and the right to mount (root, or fusermount3), which this sandbox grants.

Run as its own process (`python -m devstack.slow_disk BACKING MOUNTPOINT --control FILE`): it mounts in the
foreground until unmounted (`unmount` below), so a stop never leaves the broker writing into a dead mount first.
The delays are read from the JSON control file (`{"write_ms": N, "fsync_ms": M}`) whenever it changes, so a running
broker's disk can be slowed and restored without a restart.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulse.errors import ClusterError
from pulse.process import ManagedProcess, stop_pid

MOUNT_TIMEOUT_S = 20.0
CONTROL_CHECK_S = 0.5
"""How often the control file's modification time is looked at (a changed delay applies within this)."""


@dataclass(frozen=True)
class Delays:
    """Milliseconds slept before each write() and each fsync() reaching the backing directory."""

    write_ms: float = 0.0
    fsync_ms: float = 0.0

    @classmethod
    def read(cls, path: Path) -> Delays:
        """From the control file; ClusterError naming the file and the problem when it is not usable."""
        try:
            raw = json.loads(path.read_text())
            delays = cls(float(raw.get("write_ms", 0.0)), float(raw.get("fsync_ms", 0.0)))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise ClusterError(f"slow disk control file {path}: {exc}") from exc
        if delays.write_ms < 0 or delays.fsync_ms < 0:
            raise ClusterError(f"slow disk control file {path}: delays must be >= 0 ms, not {delays}")
        return delays

    def write(self, path: Path) -> None:
        """Replace the control file atomically (the mount picks it up within CONTROL_CHECK_S)."""
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"write_ms": self.write_ms, "fsync_ms": self.fsync_ms}))
        tmp.replace(path)


def parse_slow_disk(value: str, nodes: int) -> tuple[int, int]:
    """`NODE:MS` (the `dev up --slow-disk` value) -> (node, ms); ValueError naming the value and the rule (pure)."""
    node_text, sep, ms_text = value.partition(":")
    if not sep or not node_text.isdigit() or not ms_text.isdigit():
        raise ValueError(f"--slow-disk {value!r}: expected NODE:MS, e.g. 2:50")
    node, ms = int(node_text), int(ms_text)
    if not 1 <= node <= nodes:
        raise ValueError(f"--slow-disk {value!r}: node {node} is not one of the cluster's nodes 1-{nodes}")
    if ms > 10_000:
        raise ValueError(f"--slow-disk {value!r}: {ms} ms per write is more than 10 s (brokers would be fenced)")
    return node, ms


def is_mounted(mountpoint: Path) -> bool:
    """Listed in /proc/mounts (a mount whose process died is still listed, and still needs unmounting)."""
    target = str(mountpoint.absolute())
    with open("/proc/mounts") as mounts:
        return any(line.split()[1].replace("\\040", " ") == target for line in mounts if line.strip())


def mount(backing: Path, mountpoint: Path, control: Path, log: Path) -> ManagedProcess:
    """Start the pass-through on `mountpoint` over `backing` and wait until it is mounted."""
    backing.mkdir(parents=True, exist_ok=True)
    mountpoint.mkdir(parents=True, exist_ok=True)
    if not control.exists():
        Delays().write(control)
    argv = [sys.executable, "-m", "devstack.slow_disk", str(backing), str(mountpoint), "--control", str(control)]
    process = ManagedProcess(f"slow disk {mountpoint}", argv, log).start()
    try:
        process.wait_ready(lambda: is_mounted(mountpoint), MOUNT_TIMEOUT_S, f"FUSE mounted on {mountpoint}")
    except BaseException:
        process.stop(grace_s=2)
        raise
    return process


def unmount(mountpoint: Path) -> None:
    """Unmount (the pass-through process then exits by itself); lazily if still busy. Quiet when not mounted."""
    if not is_mounted(mountpoint):
        return
    for argv in (
        ["fusermount3", "-u", str(mountpoint)],
        ["umount", str(mountpoint)],
        ["umount", "-l", str(mountpoint)],
    ):
        try:
            subprocess.run(argv, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if not is_mounted(mountpoint):
            return
    raise ClusterError(f"slow disk: {mountpoint} is still mounted after fusermount3 -u and umount -l")


DATA = "data"
"""The broker's log directory inside its node directory (topology's `log.dirs`); the mount point."""
BACKING = "data-backing"
CONTROL = "slow-disk.json"
PID_FILE = "slow-disk.pid"


def start_slow_disk(node_dir: Path, delay_ms: int) -> ManagedProcess:
    """Mount the node's log directory as a slow pass-through over `data-backing`, `delay_ms` before each write and
    fsync; before the node is formatted, so everything the broker writes goes through it. The PID goes in a file,
    so `dev down` from another process can stop it."""
    (node_dir / "logs").mkdir(parents=True, exist_ok=True)
    Delays(delay_ms, delay_ms).write(node_dir / CONTROL)
    process = mount(node_dir / BACKING, node_dir / DATA, node_dir / CONTROL, node_dir / "logs" / "slow-disk.log")
    (node_dir / PID_FILE).write_text(f"{process.pid}\n")
    return process


def set_slow_disk(node_dir: Path, write_ms: float, fsync_ms: float) -> None:
    """Change a running slow disk's delays (applied within CONTROL_CHECK_S); ClusterError when it has none."""
    if not is_mounted(node_dir / DATA):
        raise ClusterError(f"{node_dir / DATA} is not a slow disk: start the cluster with `dev up --slow-disk`")
    Delays(write_ms, fsync_ms).write(node_dir / CONTROL)


def stop_slow_disk(node_dir: Path, process: ManagedProcess | None = None) -> None:
    """Unmount (after the broker stopped) and stop the pass-through if it did not exit by itself: `process` when
    this process started it (reaped here), else by the PID in its file."""
    unmount(node_dir / DATA)
    pid_file = node_dir / PID_FILE
    if process is not None:
        process.stop(grace_s=5)
        pid_file.unlink(missing_ok=True)
        return
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return
    stop_pid(pid, grace_s=5)
    pid_file.unlink(missing_ok=True)


class _Control:
    """The current delays, re-read from the control file when its mtime changes (at most every CONTROL_CHECK_S)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.delays = Delays.read(path)
        self._mtime = path.stat().st_mtime_ns
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def current(self) -> Delays:
        now = time.monotonic()
        if now - self._checked >= CONTROL_CHECK_S:
            with self._lock:
                self._checked = now
                try:
                    mtime = self.path.stat().st_mtime_ns
                    if mtime != self._mtime:
                        self.delays, self._mtime = Delays.read(self.path), mtime
                except (OSError, ClusterError) as exc:  # keep the last good delays; say why once per change
                    print(f"slow disk: control file not read ({exc}); keeping {self.delays}", file=sys.stderr)
        return self.delays


def _passthrough(root: Path, control: _Control) -> Any:
    """The fusepy `Operations` forwarding every call to `root` (imported here: fusepy needs libfuse at import)."""
    from fuse import FuseOSError, Operations  # type: ignore[import-untyped]

    class SlowPassthrough(Operations):  # type: ignore[misc]
        def __init__(self) -> None:
            self.root = str(root)

        def _full(self, path: str) -> str:
            return os.path.join(self.root, path.lstrip("/"))

        def access(self, path: str, mode: int) -> None:
            if not os.access(self._full(path), mode):
                raise FuseOSError(errno.EACCES)

        def chmod(self, path: str, mode: int) -> None:
            os.chmod(self._full(path), mode)

        def chown(self, path: str, uid: int, gid: int) -> None:
            os.chown(self._full(path), uid, gid)

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            st = os.lstat(self._full(path))
            keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
            return {k: getattr(st, k) for k in keys}

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", *os.listdir(self._full(path))]

        def readlink(self, path: str) -> str:
            return os.readlink(self._full(path))

        def mknod(self, path: str, mode: int, dev: int) -> None:
            os.mknod(self._full(path), mode, dev)

        def rmdir(self, path: str) -> None:
            os.rmdir(self._full(path))

        def mkdir(self, path: str, mode: int) -> None:
            os.mkdir(self._full(path), mode)

        def statfs(self, path: str) -> dict[str, Any]:
            sv = os.statvfs(self._full(path))
            keys = (
                "f_bavail",
                "f_bfree",
                "f_blocks",
                "f_bsize",
                "f_favail",
                "f_ffree",
                "f_files",
                "f_flag",
                "f_frsize",
                "f_namemax",
            )
            return {k: getattr(sv, k) for k in keys}

        def unlink(self, path: str) -> None:
            os.unlink(self._full(path))

        def symlink(self, name: str, target: str) -> None:
            os.symlink(target, self._full(name))

        def rename(self, old: str, new: str) -> None:
            os.rename(self._full(old), self._full(new))

        def link(self, target: str, name: str) -> None:
            os.link(self._full(name), self._full(target))

        def utimens(self, path: str, times: tuple[float, float] | None = None) -> None:
            os.utime(self._full(path), times)

        def open(self, path: str, flags: int) -> int:
            return os.open(self._full(path), flags)

        def create(self, path: str, mode: int, fi: Any = None) -> int:
            return os.open(self._full(path), os.O_RDWR | os.O_CREAT, mode)  # the caller may read it back

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            return os.pread(fh, size, offset)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            delay = control.current().write_ms
            if delay:
                time.sleep(delay / 1000.0)
            return os.pwrite(fh, data, offset)

        def truncate(self, path: str, length: int, fh: int | None = None) -> None:
            if fh is not None:
                os.ftruncate(fh, length)
            else:
                os.truncate(self._full(path), length)

        def flush(self, path: str, fh: int) -> None:
            pass  # close() of a dup would be a second close; data reached the backing file at write()

        def release(self, path: str, fh: int) -> None:
            os.close(fh)

        def fsync(self, path: str, datasync: int, fh: int) -> None:
            delay = control.current().fsync_ms
            if delay:
                time.sleep(delay / 1000.0)
            if datasync:
                os.fdatasync(fh)
            else:
                os.fsync(fh)

    return SlowPassthrough()


def main(argv: list[str] | None = None) -> None:
    """Mount in the foreground until unmounted."""
    import argparse  # only for this module run as a program: the dev cluster imports it on `check`'s path

    parser = argparse.ArgumentParser(prog="python -m devstack.slow_disk", description=__doc__)
    parser.add_argument("backing", type=Path)
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("--control", type=Path, required=True, help="JSON file with write_ms and fsync_ms")
    args = parser.parse_args(argv)
    from fuse import FUSE

    operations = _passthrough(args.backing.resolve(), _Control(args.control))
    FUSE(operations, str(args.mountpoint), foreground=True, nothreads=False, allow_other=False)


if __name__ == "__main__":
    main()
