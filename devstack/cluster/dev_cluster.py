"""`DevCluster`: one local KRaft cluster started from the cached Maven jars: plan, start, await, fault-inject, stop.

It composes the parts of this package: the plan (`spec.py`), the state file (`state.py`), the node files
(`files.py`), the logins (`logins.py`) and the node processes (`nodes.py`).
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from devstack.cluster.files import NodeFiles
from devstack.cluster.logins import (
    JmxCredentials,
    ScramCredentials,
    create_scram_user,
    read_jmx_credentials,
    read_scram_credentials,
    tls_module,
    write_jmx_security,
)
from devstack.cluster.nodes import FAILED_MARKER, NodeProcesses
from devstack.cluster.spec import plan_spec
from devstack.cluster.state import load_state, save_state
from devstack.runtime import ensure_runtime
from devstack.slow_disk import set_slow_disk, start_slow_disk, stop_slow_disk
from devstack.topology import ClusterSpec, JmxSecurity, NodeSpec, Security
from pulse.errors import ClusterError, ProcessFailed
from pulse.ports import is_listening
from pulse.process import ManagedProcess


class DevCluster:
    """One local cluster living in `home`: node directories, TLS files, state and credentials."""

    def __init__(self, home: Path, spec: ClusterSpec, pids: dict[int, int] | None = None) -> None:
        self.home = home
        self.spec = spec
        self.files = NodeFiles(home)
        self.processes = NodeProcesses(spec, self.files, pids)
        self._slow_disks: dict[int, ManagedProcess] = {}
        """FUSE pass-throughs this process started (devstack/slow_disk.py), stopped after the brokers."""

    @property
    def pids(self) -> dict[int, int]:
        """Node id -> PID of every node started and not stopped (as the state file has them)."""
        return self.processes.pids

    # ---- creation and persistence -------------------------------------------------------------

    @classmethod
    def plan(
        cls,
        home: Path,
        brokers: int,
        kafka_version: str,
        security: Security,
        jmx_security: JmxSecurity = JmxSecurity.NONE,
        extra_jvm_flags: Mapping[int, Sequence[str]] | None = None,
        slow_disks: Mapping[int, int] | None = None,
        enforce_acls: bool = False,
        extra_jars: Sequence[Path] = (),
        broker_overrides: Mapping[str, str] | None = None,
        dynamic_quorum: bool = False,
    ) -> DevCluster:
        """Choose ports and ids for a new cluster; nothing is started or written yet.

        `extra_jvm_flags` maps a node id to JVM options appended to that node's own (a java agent, say).
        `slow_disks` maps a node id to the write/fsync delay (ms) its slow log directory starts with.
        `enforce_acls` (SASL_SSL only) runs the StandardAuthorizer: a login needs ACLs for everything it does,
        the dev login `pulse` excepted (`topology.enforcing_authorizer`); the least-privilege tests use it.
        `extra_jars` go on every node's classpath and `broker_overrides` into every server.properties (Cruise
        Control's metrics reporter and its `metric.reporters`, say). `dynamic_quorum` formats a KIP-853 quorum
        whose voters can be removed and added again (`ClusterSpec.dynamic_quorum`).
        """
        spec = plan_spec(
            brokers,
            kafka_version,
            security,
            jmx_security,
            extra_jvm_flags,
            slow_disks,
            enforce_acls,
            extra_jars,
            broker_overrides,
            dynamic_quorum,
        )
        return cls(home, spec)

    @classmethod
    def load(cls, home: Path) -> DevCluster:
        """Read a cluster's state file; ClusterError when there is none."""
        spec, pids = load_state(home)
        return cls(home, spec, pids)

    def save(self) -> None:
        """Write the state file atomically, so a reader never sees half of it."""
        save_state(self.home, self.spec, self.pids)

    def credentials(self) -> ScramCredentials | None:
        """The SCRAM login of a SASL_SSL cluster; None for PLAINTEXT."""
        return read_scram_credentials(self.home, self.spec)

    def jmx_credentials(self) -> JmxCredentials | None:
        """The JMX login (and trust store) of a cluster started with JMX security; None without."""
        return read_jmx_credentials(self.home, self.spec)

    # ---- paths --------------------------------------------------------------------------------

    def node_dir(self, node_id: int) -> Path:
        return self.files.node_dir(node_id)

    def log_path(self, node_id: int) -> Path:
        """The broker's own log4j log, where readiness is read from."""
        return self.files.log_path(node_id)

    def stdout_path(self, node_id: int) -> Path:
        return self.files.stdout_path(node_id)

    def node(self, node_id: int) -> NodeSpec:
        for node in self.spec.nodes:
            if node.node_id == node_id:
                return node
        known = ", ".join(str(n.node_id) for n in self.spec.nodes)
        raise ClusterError(f"no node {node_id} in the dev cluster (nodes: {known})")

    # ---- start --------------------------------------------------------------------------------

    def up(self, cache: Path, timeout_s: float = 120.0) -> None:
        """Gather jars, write configs, format storage, start every node and wait until all are RUNNING."""
        runtime = ensure_runtime(self.spec.kafka_version, cache)
        needs_tls = self.spec.security is Security.SASL_SSL or self.spec.jmx_security is JmxSecurity.AUTH_TLS
        tls = tls_module().create_tls_files(self.home / "tls") if needs_tls else None
        jmx_files = write_jmx_security(self.home, self.spec, tls)
        self._mount_slow_disks()
        node_tls = tls if self.spec.security is Security.SASL_SSL else None
        for node in self.spec.nodes:
            self.files.write(runtime, self.spec, node, node_tls, jmx_files)
        self.processes.format(runtime)
        self.save()
        try:
            for node in self.spec.nodes:
                self.processes.start(runtime, node)
            self.save()
            self.processes.await_ready([n.node_id for n in self.spec.nodes], timeout_s)
            if self.spec.security is Security.SASL_SSL and tls is not None:
                create_scram_user(self.home, self.spec, tls)
        except BaseException:
            self.down(keep_data=True)
            raise

    def _mount_slow_disks(self) -> None:
        """Each slow node's log directory mounted before it is formatted, so all its writes go through the delay."""
        for node in self.spec.nodes:
            if node.slow_disk_ms is not None and node.node_id not in self._slow_disks:
                self._slow_disks[node.node_id] = start_slow_disk(self.node_dir(node.node_id), node.slow_disk_ms)

    def slow_disk(self, node_id: int, write_ms: float, fsync_ms: float) -> None:
        """Change the delays of a node's slow log directory while it runs (`dev up --slow-disk` made it one)."""
        set_slow_disk(self.node_dir(self.node(node_id).node_id), write_ms, fsync_ms)

    # ---- status and stop ----------------------------------------------------------------------

    def is_running(self, node_id: int) -> bool:
        return self.processes.is_running(node_id)

    def status(self) -> dict[str, Any]:
        """The `dev status --json` document (a public contract)."""
        return {
            "bootstrap_servers": self.spec.bootstrap_servers,
            "kafka_version": self.spec.kafka_version,
            "cluster_id": self.spec.cluster_id,
            "security": self.spec.security.value,
            "jmx_security": self.spec.jmx_security.value,
            "home": str(self.home),
            "brokers": [
                {
                    "id": n.node_id,
                    "rack": n.rack,
                    "port": n.port,
                    "jmx_port": n.jmx_port,
                    "controller_port": n.controller_port,
                    "pid": self.pids.get(n.node_id),
                    "running": self.is_running(n.node_id),
                }
                for n in self.spec.nodes
            ],
        }

    def down(self, keep_data: bool = False) -> None:
        """Stop every node by PID (in parallel: each gets SIGTERM, then SIGKILL after a grace period)."""
        self.processes.stop_all(grace_s=20)
        for node in self.spec.nodes:  # after the brokers: none is left writing into a gone mount
            if node.slow_disk_ms is not None:
                stop_slow_disk(self.node_dir(node.node_id), self._slow_disks.pop(node.node_id, None))
        if keep_data:
            self.save()
        else:
            shutil.rmtree(self.home, ignore_errors=True)

    def ports(self) -> list[int]:
        """Every port the cluster binds, for checks that nothing is left behind."""
        out: list[int] = []
        for n in self.spec.nodes:
            out += [n.port, n.controller_port, n.jmx_port] + ([n.internal_port] if n.internal_port else [])
        return out

    def listening_ports(self) -> list[int]:
        return [p for p in self.ports() if is_listening(p)]

    # ---- faults -------------------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        """kill -9 one node: no controlled shutdown, as when a machine dies."""
        self.node(node_id)
        pid = self.processes.signal(node_id, signal.SIGKILL)
        self.processes.stop(node_id, pid, grace_s=0)  # reaps it if it is our child
        self.pids.pop(node_id, None)
        self.save()

    def pause(self, node_id: int) -> None:
        """SIGSTOP one node: its sockets stay open but nothing answers, as with a hung broker."""
        self.node(node_id)
        self.processes.signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        self.node(node_id)
        self.processes.signal(node_id, signal.SIGCONT)

    def restart(self, node_id: int, cache: Path, timeout_s: float = 180.0) -> None:
        """Start a node again with its existing data (stopping it first if it still runs) and await it: up to 3
        minutes by default, since on a loaded host a node took 91 s to register again with a slowed quorum."""
        node = self.node(node_id)
        pid = self.pids.pop(node_id, None)
        if pid is not None:
            self.processes.stop(node_id, pid, grace_s=20)
        runtime = ensure_runtime(self.spec.kafka_version, cache)
        log = self.log_path(node_id)
        for attempt in (1, 2):
            offset = log.stat().st_size if log.exists() else 0
            self.processes.start(runtime, node)
            self.save()
            try:
                self.processes.await_ready([node_id], timeout_s, {node_id: offset})
                return
            except ProcessFailed:
                # One more start only when this one gave up registering (seen with a quorum slowed by a loaded host).
                if attempt == 2 or self.files.log_since(node_id, offset).find(FAILED_MARKER) < 0:
                    raise
                self.processes.stop(node_id, self.pids.pop(node_id), grace_s=5)
