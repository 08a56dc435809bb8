"""Loopback port helpers: every server kafka-pulse starts for development binds 127.0.0.1 on a free port."""

import os
import random
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from pulse.polling import PollTimeout, poll

LOOPBACK = "127.0.0.1"


EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10_000
"""Ports are handed out from LOWEST_PORT up to just below the kernel's ephemeral range, never inside it."""
CLAIMS_DIR = Path(tempfile.gettempdir()) / "kafka-pulse-ports"
"""One file per port handed out, holding the claiming PID, so concurrent processes never hand out the same port."""


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that are free now, outside the kernel's ephemeral range and claimed for this
    process: a port from bind(0) lies in that range, where any outgoing connection (a Kafka client's, a JVM's) can
    take it before the caller binds it, and a second test run on the host can be handed it too."""
    low, high = _handout_range()
    ports: list[int] = []
    rng = random.Random()
    start = rng.randrange(low, high)
    for offset in range(high - low):
        port = low + (start - low + offset) % (high - low)
        if _claim(port) and _bindable(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise OSError(f"no {count} free loopback ports between {low} and {high} (claims in {CLAIMS_DIR})")


def _handout_range() -> tuple[int, int]:
    """[LOWEST_PORT, the ephemeral range's start); the whole unprivileged range above it when that is empty."""
    try:
        ephemeral_low = int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32_768
    if ephemeral_low - LOWEST_PORT < 1_000:
        return LOWEST_PORT, 65_535
    return LOWEST_PORT, ephemeral_low


def _claim(port: int) -> bool:
    """Create the port's claim file for this PID; take over a claim whose process is gone."""
    CLAIMS_DIR.mkdir(mode=0o700, exist_ok=True)
    path = CLAIMS_DIR / str(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            if not _claim_is_stale(path):
                return False
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


def _claim_is_stale(path: Path) -> bool:
    """A claim is stale once the PID in it is no longer running (an unreadable claim is left alone)."""
    try:
        pid = int(path.read_text() or "0")
    except (OSError, ValueError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return pid <= 0


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def is_listening(port: int, host: str = LOOPBACK, timeout_s: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> bool:
    """`poll` (pulse/polling.py) for callers that branch on the outcome: True once `condition` holds, False when
    `timeout_s` passes first. A test asserts with `poll` instead, whose failure shows the last value seen."""
    try:
        poll(condition, bool, timeout_s, "condition", interval_s)
    except PollTimeout:
        return False
    return True
