"""Start, watch and stop the child processes kafka-pulse runs locally (Kafka nodes, Prometheus, Burrow, ...).

Each child gets its own session (so a signal reaches it and nothing else), writes stdout and stderr to a log
file, and is stopped by PID: SIGTERM, a grace period, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pulse.errors import DependencyMissing, ProcessFailed
from pulse.polling import PollTimeout, poll


def pid_alive(pid: int) -> bool:
    """True while `pid` names a live process; a zombie (exited, not yet reaped) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state letter follows the parenthesised command name, which may itself contain spaces.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _reap(pid: int) -> None:
    """Collect the exit status of our own child so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop_pid(pid: int, grace_s: float = 15.0) -> None:
    """Stop a process by PID: SIGTERM, wait up to `grace_s`, then SIGKILL; a SIGSTOPped process is resumed first."""
    if not pid_alive(pid):
        _reap(pid)
        return
    for sig in (signal.SIGCONT, signal.SIGTERM):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while pid_alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.05)


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, for error messages and test failure reports."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class ManagedProcess:
    """One child process with its log file; `name` appears in every error about it."""

    name: str
    argv: Sequence[str]
    log_path: Path
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        if self.popen is None:
            raise ProcessFailed(f"{self.name}: not started")
        return self.popen.pid

    def start(self) -> ManagedProcess:
        """Launch the process; its output goes to `log_path`, never to our terminal."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            try:
                self.popen = subprocess.Popen(
                    list(self.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=dict(self.env) if self.env is not None else None,
                    cwd=self.cwd,
                    start_new_session=True,
                )
            except FileNotFoundError as exc:
                raise ProcessFailed(f"{self.name}: cannot run {self.argv[0]!r}: {exc.strerror}") from exc
        return self

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def wait_ready(self, ready: Callable[[], bool], timeout_s: float, what: str = "ready") -> None:
        """Poll `ready` until true; fail with the log tail if the process exits or time runs out."""

        def state() -> bool | None:
            """None once the process has exited, else whether it is ready."""
            return ready() if self.running() else None

        try:
            seen = poll(state, lambda s: s is not False, timeout_s, f"{self.name} {what}", interval_s=0.1)
        except PollTimeout as exc:
            raise ProcessFailed(
                f"{self.name} was not {what} after {timeout_s:.0f} s; last lines of {self.log_path}:\n"
                f"{tail(self.log_path)}"
            ) from exc
        if seen is None:
            code = self.popen.returncode if self.popen else None
            raise ProcessFailed(
                f"{self.name} exited with status {code} before it was {what}; "
                f"last lines of {self.log_path}:\n{tail(self.log_path)}"
            )

    def stop(self, grace_s: float = 15.0) -> None:
        """Stop by PID and reap; safe to call twice."""
        if self.popen is None:
            return
        stop_pid(self.popen.pid, grace_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


def require_program(program: str, package: str) -> str:
    """The absolute path of `program`; a missing program fails loudly and names the Debian package to install,
    because a skipped integration test would hide a broken machine."""
    found = shutil.which(program)
    if found is None:
        raise DependencyMissing(
            f"{program!r} is not on PATH; install the Debian package {package!r} (apt-get install {package})"
        )
    return found


def require_file(path: Path, package: str) -> Path:
    """`path` itself, after checking it exists; for jars a Debian package puts in /usr/share/java."""
    if not path.exists():
        raise DependencyMissing(f"{path} does not exist; install the Debian package {package!r}")
    return path
