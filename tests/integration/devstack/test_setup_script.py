"""`scripts/setup.sh` leaves host services alone: run on a machine where a Prometheus is already serving (the Debian
binary on a loopback port, standing in for the host's own) and where systemd reports every packaged unit active,
it neither stops, masks nor reconfigures anything, and the same process still listens afterwards. It used to
`systemctl stop` zookeeper, prometheus, alertmanager, pushgateway and burrow: running the tests stopped a host's
real Prometheus."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from devstack.prometheus import Prometheus
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
"""Debian's hook that lets invoke-rc.d start services or not: host config, which setup must not add or remove."""
SERVICE_TOOLS = ("systemctl", "service", "invoke-rc.d", "update-rc.d", "deb-systemd-invoke", "deb-systemd-helper")
CHANGING = {"stop", "kill", "mask", "disable", "restart", "try-restart", "reload", "edit", "set-property", "isolate"}
"""Verbs of those tools that would stop or reconfigure a running service."""


def shims(bin_dir: Path, calls: Path) -> None:
    """Service tools that record their arguments and report every unit active (a systemd host where the packages'
    services run), and an apt-get and a Python that refuse to install: this test runs the set-up fast path on an
    installed machine, never an installation under the other processes using the package."""
    bin_dir.mkdir()
    for tool in SERVICE_TOOLS:
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "{calls}"\nexit 0\n')
    (bin_dir / "apt-get").write_text(
        '#!/bin/sh\necho "setup ran apt-get $*: run scripts/setup.sh first" >&2\nexit 97\n'
    )
    (bin_dir / "python3").write_text(
        '#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        '  echo "setup ran pip $*: run scripts/setup.sh first" >&2; exit 97\nfi\n'
        f'exec "{os.path.realpath(_python())}" "$@"\n'
    )
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)


def _python() -> str:
    found = subprocess.run(["sh", "-c", "command -v python3"], capture_output=True, text=True, check=True)
    return found.stdout.strip()


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on 127.0.0.1:`port` (state 0A in /proc/net/tcp)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and local == f"0100007F:{port:04X}":
            inodes.add(inode)
    return inodes


def socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            found.add(target[len("socket:[") : -1])
    return found


def test_setup_leaves_a_listening_host_service_alone(tmp_path: Path) -> None:
    calls = tmp_path / "service-tool-calls.txt"
    shims(tmp_path / "bin", calls)
    policy_before = POLICY_RC_D.read_bytes() if POLICY_RC_D.exists() else None
    with Prometheus(tmp_path / "host-prometheus") as host:
        register_log("host prometheus", host.log_path)
        pid = host.pid
        assert listening_inodes(host.port) & socket_inodes(pid), "the stand-in does not listen"
        env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "PYTHON": "python3"}
        result = subprocess.run(
            ["bash", "scripts/setup.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        assert host.running() and host.pid == pid
        assert listening_inodes(host.port) & socket_inodes(pid), "the same process no longer listens"
        assert host.call("GET", "/-/ready").status_code == 200
    recorded = calls.read_text().splitlines() if calls.exists() else []
    changing = [c for c in recorded if CHANGING & set(c.split()[1:])]
    assert not changing, f"setup ran {changing}"
    assert (POLICY_RC_D.read_bytes() if POLICY_RC_D.exists() else None) == policy_before
