"""Loopback port helpers: every server kafka-pulse starts for development binds 127.0.0.1 on a free port."""

import socket
from collections.abc import Callable

from pulse.polling import PollTimeout, poll

LOOPBACK = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """Reserve `count` distinct free loopback ports by binding port 0, then release them for the caller."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


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
