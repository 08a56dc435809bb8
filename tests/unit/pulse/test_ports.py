"""Ports handed out for development servers: outside the ephemeral range, and never twice across processes."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pulse import ports


@pytest.fixture()
def small_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Hand out from 10000-11999 (the ephemeral range said to start at 12000), claims under tmp_path."""
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("12000\t60999\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", range_file)
    monkeypatch.setattr(ports, "LOWEST_PORT", 10_000)
    claims = tmp_path / "claims"
    monkeypatch.setattr(ports, "CLAIMS_DIR", claims)
    return claims


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_ports_are_distinct_below_the_ephemeral_range_and_claimed(small_range: Path) -> None:
    handed = ports.free_ports(5)
    assert len(set(handed)) == 5
    assert all(10_000 <= port < 12_000 for port in handed)
    assert all((small_range / str(port)).read_text() == str(os.getpid()) for port in handed)


def test_a_port_claimed_by_a_live_process_is_never_handed_out(small_range: Path) -> None:
    small_range.mkdir()
    for port in range(10_000, 12_000):
        if port != 10_500:
            (small_range / str(port)).write_text("1")  # PID 1 is always running
    assert ports.free_ports(1) == [10_500]
    with pytest.raises(OSError, match="no 1 free loopback ports between 10000 and 12000"):
        ports.free_ports(1)


def test_a_claim_left_by_a_dead_process_is_taken_over(small_range: Path) -> None:
    small_range.mkdir()
    gone = dead_pid()
    for port in range(10_000, 12_000):
        (small_range / str(port)).write_text(str(gone))
    handed = ports.free_ports(3)
    assert all((small_range / str(port)).read_text() == str(os.getpid()) for port in handed)


def test_a_port_something_listens_on_is_skipped(small_range: Path) -> None:
    small_range.mkdir()
    with socket.socket() as listener:
        listener.bind((ports.LOOPBACK, 10_700))
        listener.listen()
        for port in range(10_000, 12_000):
            if port not in (10_700, 10_701):
                (small_range / str(port)).write_text("1")
        assert ports.free_ports(1) == [10_701]


def test_the_real_range_stays_out_of_the_kernels_ephemeral_ports() -> None:
    low, high = ports._handout_range()
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert (low, high) == (10_000, ephemeral_low)
