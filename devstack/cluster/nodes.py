"""The node JVMs of a dev cluster: format storage, start each node, await readiness, signal and stop by PID.

PIDs are what another process knows of the cluster (they are in the state file); nodes this process started are
also kept as children, so they are reaped here rather than left as zombies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from devstack.cluster.files import NodeFiles
from devstack.runtime import KafkaRuntime
from devstack.topology import ClusterSpec, JmxSecurity, NodeSpec, jvm_flags
from pulse.errors import ClusterError, ProcessFailed
from pulse.process import ManagedProcess, pid_alive, stop_pid, tail

STARTED_MARKER = "Kafka Server started"  # KafkaRaftServer, logged once the broker is RUNNING
FAILED_MARKER = "Exiting Kafka due to fatal exception during startup"
"""Logged when start-up gave up (for one, a restarted node that could not register with a busy quorum); the JVM
can then take minutes to finish shutting down its controller."""


class NodeProcesses:
    """The running (or last known) node processes of one cluster, by node id."""

    def __init__(self, spec: ClusterSpec, files: NodeFiles, pids: dict[int, int] | None = None) -> None:
        self.spec = spec
        self.files = files
        self.pids: dict[int, int] = dict(pids or {})
        self._children: dict[int, ManagedProcess] = {}

    def format(self, runtime: KafkaRuntime) -> None:
        """Format every node's storage with one cluster id; the JVMs run side by side to save start time."""
        procs = []
        for node in self.spec.nodes:
            node_dir = self.files.node_dir(node.node_id)
            argv = [
                "java",
                "-cp",
                runtime.classpath,
                f"-Dlog4j2.configurationFile={node_dir / 'log4j.properties'}",
                f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}",
                f"-Dkafka.logs.dir={node_dir / 'logs'}",
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={self.spec.cluster_id}",
                "-c",
                str(node_dir / "server.properties"),
                "--ignore-formatted",
                *(("--initial-controllers", self.spec.initial_controllers) if self.spec.dynamic_quorum else ()),
            ]
            procs.append((node, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        for node, proc in procs:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise ProcessFailed(
                    f"formatting node {node.node_id} failed (status {proc.returncode}):\n"
                    + out.decode(errors="replace")[-2000:]
                )

    def start(self, runtime: KafkaRuntime, node: NodeSpec) -> None:
        node_dir = self.files.node_dir(node.node_id)
        secured = self.spec.jmx_security is not JmxSecurity.NONE
        flags = jvm_flags(
            runtime.major,
            node.jmx_port,
            node_dir / "log4j.properties",
            node_dir / "logs",
            jmx_config_file=self.files.jmx_config_file(node.node_id) if secured else None,
            extra=node.extra_jvm_flags,
        )
        argv = [
            "java",
            *flags,
            "-cp",
            os.pathsep.join([runtime.classpath, *self.spec.extra_jars]),
            "kafka.Kafka",
            str(node_dir / "server.properties"),
        ]
        proc = ManagedProcess(f"kafka node {node.node_id}", argv, self.files.stdout_path(node.node_id)).start()
        self.pids[node.node_id] = proc.pid
        self._children[node.node_id] = proc

    def await_ready(self, node_ids: list[int], timeout_s: float, log_offsets: dict[int, int] | None = None) -> None:
        """Wait for each node's 'Kafka Server started' line, then for metadata listing every broker."""
        offsets = log_offsets or {}
        deadline = time.monotonic() + timeout_s
        pending = set(node_ids)
        while pending:
            for node_id in sorted(pending):
                pid = self.pids.get(node_id)
                if pid is None or not pid_alive(pid):
                    raise ProcessFailed(
                        f"kafka node {node_id} exited during start-up; last lines of its logs:\n"
                        f"{tail(self.files.log_path(node_id))}\n{tail(self.files.stdout_path(node_id), 15)}"
                    )
                since = self.files.log_since(node_id, offsets.get(node_id, 0))
                if since.find(STARTED_MARKER) >= 0:
                    pending.discard(node_id)
                elif since.find(FAILED_MARKER) >= 0:
                    raise ProcessFailed(
                        f"kafka node {node_id} gave up starting; last lines of its log:\n"
                        f"{tail(self.files.log_path(node_id))}"
                    )
            if pending and time.monotonic() > deadline:
                raise ProcessFailed(
                    f"kafka nodes {sorted(pending)} not RUNNING after {timeout_s:.0f} s; last lines of node "
                    f"{min(pending)}:\n{tail(self.files.log_path(min(pending)))}"
                )
            if pending:
                time.sleep(0.2)
        remaining = max(5.0, deadline - time.monotonic())
        self._await_brokers_in_metadata(set(self.pids), remaining)

    def _await_brokers_in_metadata(self, expected: set[int], timeout_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.spec.internal_bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout_s
        seen: set[int] = set()
        while time.monotonic() < deadline:
            try:
                seen = set(admin.list_topics(timeout=5).brokers)
            except Exception:
                seen = set()
            if expected <= seen:
                return
            time.sleep(0.2)
        raise ProcessFailed(f"metadata lists brokers {sorted(seen)}, expected {sorted(expected)}")

    def is_running(self, node_id: int) -> bool:
        pid = self.pids.get(node_id)
        return pid is not None and pid_alive(pid)

    def signal(self, node_id: int, sig: signal.Signals) -> int:
        """Send `sig` to a running node; returns its PID."""
        pid = self.pids.get(node_id)
        if pid is None or not pid_alive(pid):
            raise ClusterError(f"kafka node {node_id} is not running")
        os.kill(pid, sig)
        return pid

    def stop(self, node_id: int, pid: int, grace_s: float) -> None:
        child = self._children.pop(node_id, None)
        if child is not None and child.pid == pid:
            child.stop(grace_s)
        else:
            stop_pid(pid, grace_s)

    def stop_all(self, grace_s: float) -> None:
        """Stop every node by PID, in parallel: each gets SIGTERM (after SIGCONT, if paused), then SIGKILL after
        `grace_s`."""
        for pid in self.pids.values():
            if pid_alive(pid):
                for sig in (signal.SIGCONT, signal.SIGTERM):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
        for node_id, pid in self.pids.items():
            self.stop(node_id, pid, grace_s)
        self.pids.clear()
