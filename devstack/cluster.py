"""A local KRaft cluster started from the cached Maven jars: format, start, await, fault-inject, stop.

Its state (ports, PIDs, version) is a JSON file in the cluster's home directory, so `dev status`, `dev down`
and every other command find the cluster again from another process.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from devstack import require_dev_extra
from devstack.runtime import KafkaRuntime, ensure_runtime
from devstack.slow_disk import set_slow_disk, start_slow_disk, stop_slow_disk
from devstack.topology import (
    RACKS,
    SCRAM_MECHANISM,
    ClusterSpec,
    JmxAuthFiles,
    JmxSecurity,
    NodeSpec,
    Security,
    TlsFiles,
    enforcing_authorizer,
    jvm_flags,
    render_jmx_management_properties,
    render_jmx_ssl_properties,
    render_log_config,
    render_server_properties,
)
from pulse.errors import ClusterError, ProcessFailed
from pulse.ports import free_ports, is_listening
from pulse.process import ManagedProcess, pid_alive, stop_pid, tail

STATE_FILE = "state.json"
CREDENTIALS_FILE = "credentials.json"
JMX_CREDENTIALS_FILE = "jmx-credentials.json"
STARTED_MARKER = "Kafka Server started"  # KafkaRaftServer, logged once the broker is RUNNING
FAILED_MARKER = "Exiting Kafka due to fatal exception during startup"
"""Logged when start-up gave up (for one, a restarted node that could not register with a busy quorum); the JVM
can then take minutes to finish shutting down its controller."""
SCRAM_USER = "pulse"
JMX_USER = "pulse-monitor"
"""The JMX login of a secured dev cluster; its role is `readonly`, all a collector needs."""


@dataclass(frozen=True)
class ScramCredentials:
    """The dev cluster's client login; kept in a 0600 file, never printed by `dev status`."""

    username: str
    password: str
    mechanism: str
    ca_file: str


@dataclass(frozen=True)
class JmxCredentials:
    """How a JMX client logs in to a secured dev cluster; kept in a 0600 file like `ScramCredentials`."""

    username: str
    password: str
    ssl: bool
    truststore: str | None = None
    """PKCS#12 trust store holding the dev CA, for JVM clients; None without TLS."""
    truststore_password: str | None = None


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (passwords, keystore settings)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid format).

    Like Kafka's own Uuid.randomUuid, ids starting with '-' are drawn again: the storage tool would read one
    as an option (seen here: "argument --cluster-id/-t: expected one argument").
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class DevCluster:
    """One local cluster living in `home`: node directories, TLS files, state and credentials."""

    def __init__(self, home: Path, spec: ClusterSpec, pids: dict[int, int] | None = None) -> None:
        self.home = home
        self.spec = spec
        self.pids: dict[int, int] = dict(pids or {})
        # Nodes this process started: kept so they are reaped here rather than left as zombies.
        self._children: dict[int, ManagedProcess] = {}
        self._slow_disks: dict[int, ManagedProcess] = {}
        """FUSE pass-throughs this process started (devstack/slow_disk.py), stopped after the brokers."""

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
    ) -> DevCluster:
        """Choose ports and ids for a new cluster; nothing is started or written yet.

        `extra_jvm_flags` maps a node id to JVM options appended to that node's own (a java agent, say).
        `slow_disks` maps a node id to the write/fsync delay (ms) its slow log directory starts with.
        `enforce_acls` (SASL_SSL only) runs the StandardAuthorizer: a login needs ACLs for everything it does,
        the dev login `pulse` excepted (`topology.enforcing_authorizer`); the least-privilege tests use it.
        `extra_jars` go on every node's classpath and `broker_overrides` into every server.properties (Cruise
        Control's metrics reporter and its `metric.reporters`, say).
        """
        missing_jars = [str(jar) for jar in extra_jars if not jar.is_file()]
        if missing_jars:
            raise ClusterError(f"extra jar(s) not found: {', '.join(missing_jars)}")
        if enforce_acls and security is not Security.SASL_SSL:
            raise ClusterError("enforcing ACLs needs logins: use the sasl_ssl security mode")
        if brokers not in (1, 3):
            raise ClusterError(f"--brokers must be 1 or 3, not {brokers}")
        extra = dict(extra_jvm_flags or {})
        unknown = sorted(set(extra) - set(range(1, brokers + 1)))
        slow = dict(slow_disks or {})
        if sorted(set(slow) - set(range(1, brokers + 1))):
            raise ClusterError(f"slow disk for node(s) {sorted(slow)}, but the cluster has nodes 1-{brokers}")
        if unknown:
            raise ClusterError(f"extra JVM flags for node(s) {unknown}, but the cluster has nodes 1-{brokers}")
        per_node = 4 if security is Security.SASL_SSL else 3
        ports = free_ports(brokers * per_node)
        nodes = []
        for i in range(brokers):
            p = ports[i * per_node : (i + 1) * per_node]
            nodes.append(
                NodeSpec(
                    node_id=i + 1,
                    rack=RACKS[i],
                    port=p[0],
                    controller_port=p[1],
                    jmx_port=p[2],
                    internal_port=p[3] if security is Security.SASL_SSL else None,
                    extra_jvm_flags=tuple(extra.get(i + 1, ())),
                    slow_disk_ms=slow.get(i + 1),
                )
            )
        overrides = (*(enforcing_authorizer(SCRAM_USER) if enforce_acls else ()), *(broker_overrides or {}).items())
        jars = tuple(str(jar.resolve()) for jar in extra_jars)
        spec = ClusterSpec(new_cluster_id(), kafka_version, security, tuple(nodes), jmx_security, overrides, jars)
        return cls(home, spec)

    @classmethod
    def load(cls, home: Path) -> DevCluster:
        """Read a cluster's state file; ClusterError when there is none."""
        path = home / STATE_FILE
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterError(
                f"no dev cluster at {home} (no {STATE_FILE}); start one with `kafka-pulse dev up`"
            ) from None
        except json.JSONDecodeError as exc:
            raise ClusterError(f"{path}: not valid JSON ({exc}); remove {home} and start again") from exc
        try:
            nodes = tuple(
                NodeSpec(**{**node, "extra_jvm_flags": tuple(node.get("extra_jvm_flags", ()))}) for node in raw["nodes"]
            )
            jmx_security = JmxSecurity(raw.get("jmx_security", JmxSecurity.NONE.value))
            jars = tuple(str(jar) for jar in raw.get("extra_jars", ()))
            spec = ClusterSpec(
                raw["cluster_id"], raw["kafka_version"], Security(raw["security"]), nodes, jmx_security, extra_jars=jars
            )
            pids = {int(k): int(v) for k, v in raw.get("pids", {}).items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise ClusterError(f"{path}: unreadable state ({exc!r}); remove {home} and start again") from exc
        return cls(home, spec, pids)

    def save(self) -> None:
        """Write the state file atomically, so a reader never sees half of it."""
        state = {
            "cluster_id": self.spec.cluster_id,
            "kafka_version": self.spec.kafka_version,
            "security": self.spec.security.value,
            "jmx_security": self.spec.jmx_security.value,
            "bootstrap_servers": self.spec.bootstrap_servers,
            "nodes": [asdict(n) for n in self.spec.nodes],
            "pids": {str(k): v for k, v in self.pids.items()},
            "extra_jars": list(self.spec.extra_jars),
        }
        self.home.mkdir(parents=True, exist_ok=True)
        tmp = self.home / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.home / STATE_FILE)

    def credentials(self) -> ScramCredentials | None:
        """The SCRAM login of a SASL_SSL cluster; None for PLAINTEXT."""
        path = self.home / CREDENTIALS_FILE
        if self.spec.security is Security.PLAINTEXT or not path.exists():
            return None
        return ScramCredentials(**json.loads(path.read_text()))

    def jmx_credentials(self) -> JmxCredentials | None:
        """The JMX login (and trust store) of a cluster started with JMX security; None without."""
        path = self.home / JMX_CREDENTIALS_FILE
        if self.spec.jmx_security is JmxSecurity.NONE or not path.exists():
            return None
        return JmxCredentials(**json.loads(path.read_text()))

    # ---- paths --------------------------------------------------------------------------------

    def node_dir(self, node_id: int) -> Path:
        return self.home / f"node-{node_id}"

    def log_path(self, node_id: int) -> Path:
        """The broker's own log4j log, where readiness is read from."""
        return self.node_dir(node_id) / "logs" / "server.log"

    def stdout_path(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "logs" / "stdout.log"

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
        tls = _tls().create_tls_files(self.home / "tls") if needs_tls else None
        jmx_files = self._write_jmx_security(tls)
        self._mount_slow_disks()
        for node in self.spec.nodes:
            self._write_node_files(runtime, node, tls if self.spec.security is Security.SASL_SSL else None, jmx_files)
        self._format(runtime)
        self.save()
        try:
            for node in self.spec.nodes:
                self._start_node(runtime, node)
            self.save()
            self._await_ready([n.node_id for n in self.spec.nodes], timeout_s)
            if self.spec.security is Security.SASL_SSL and tls is not None:
                self._create_scram_user(tls)
        except BaseException:
            self.down(keep_data=True)
            raise

    def _write_node_files(
        self, runtime: KafkaRuntime, node: NodeSpec, tls: TlsFiles | None, jmx_files: JmxAuthFiles | None
    ) -> None:
        node_dir = self.node_dir(node.node_id)
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        # server.properties may hold the keystore password
        _write_private(
            node_dir / "server.properties", render_server_properties(self.spec, node, node_dir / "data", tls)
        )
        (node_dir / "log4j.properties").write_text(render_log_config(runtime.major))
        if jmx_files is not None:
            management = render_jmx_management_properties(node.jmx_port, jmx_files)
            _write_private(self._jmx_config_file(node.node_id), management)

    def _mount_slow_disks(self) -> None:
        """Each slow node's log directory mounted before it is formatted, so all its writes go through the delay."""
        for node in self.spec.nodes:
            if node.slow_disk_ms is not None and node.node_id not in self._slow_disks:
                self._slow_disks[node.node_id] = start_slow_disk(self.node_dir(node.node_id), node.slow_disk_ms)

    def slow_disk(self, node_id: int, write_ms: float, fsync_ms: float) -> None:
        """Change the delays of a node's slow log directory while it runs (`dev up --slow-disk` made it one)."""
        set_slow_disk(self.node_dir(self.node(node_id).node_id), write_ms, fsync_ms)

    def _jmx_config_file(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "management.properties"

    def _write_jmx_security(self, tls: TlsFiles | None) -> JmxAuthFiles | None:
        """The JMX login, access and TLS files every node shares, and the client's copy of the login (all 0600).

        No password reaches a command line: the broker reads these files (the JVM rewrites the password file with
        salted hashes at the first login), and clients read `jmx-credentials.json` or their own config.
        """
        if self.spec.jmx_security is JmxSecurity.NONE:
            return None
        directory = self.home / "jmx"
        directory.mkdir(parents=True, exist_ok=True)
        password = secrets.token_urlsafe(18)
        files = JmxAuthFiles(directory / "jmxremote.password", directory / "jmxremote.access")
        _write_private(files.password_file, f"{JMX_USER} {password}\n")
        _write_private(files.access_file, f"{JMX_USER} readonly\n")
        creds = JmxCredentials(JMX_USER, password, ssl=False)
        if self.spec.jmx_security is JmxSecurity.AUTH_TLS:
            if tls is None:
                raise ValueError("JMX over TLS needs the cluster's TLS files")
            ssl_config = directory / "jmx-ssl.properties"
            _write_private(ssl_config, render_jmx_ssl_properties(tls))
            files = JmxAuthFiles(files.password_file, files.access_file, ssl_config)
            truststore = self.home / "tls" / "truststore.p12"
            trust_password = _tls().write_truststore(tls.ca_file, truststore)
            creds = JmxCredentials(JMX_USER, password, True, str(truststore), trust_password)
        _write_private(self.home / JMX_CREDENTIALS_FILE, json.dumps(asdict(creds)))
        return files

    def _java(self, runtime: KafkaRuntime, *args: str) -> list[str]:
        return ["java", "-cp", runtime.classpath, *args]

    def _format(self, runtime: KafkaRuntime) -> None:
        """Format every node's storage with one cluster id; the JVMs run side by side to save start time."""
        procs = []
        for node in self.spec.nodes:
            node_dir = self.node_dir(node.node_id)
            argv = self._java(
                runtime,
                f"-Dlog4j2.configurationFile={node_dir / 'log4j.properties'}",
                f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}",
                f"-Dkafka.logs.dir={node_dir / 'logs'}",
                "kafka.tools.StorageTool", "format",
                f"--cluster-id={self.spec.cluster_id}",
                "-c", str(node_dir / "server.properties"),
                "--ignore-formatted",
            )  # fmt: skip
            procs.append((node, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        for node, proc in procs:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise ProcessFailed(
                    f"formatting node {node.node_id} failed (status {proc.returncode}):\n"
                    + out.decode(errors="replace")[-2000:]
                )

    def _start_node(self, runtime: KafkaRuntime, node: NodeSpec) -> None:
        node_dir = self.node_dir(node.node_id)
        secured = self.spec.jmx_security is not JmxSecurity.NONE
        flags = jvm_flags(
            runtime.major,
            node.jmx_port,
            node_dir / "log4j.properties",
            node_dir / "logs",
            jmx_config_file=self._jmx_config_file(node.node_id) if secured else None,
            extra=node.extra_jvm_flags,
        )
        argv = [
            "java",
            *flags,
            "-cp", os.pathsep.join([runtime.classpath, *self.spec.extra_jars]),
            "kafka.Kafka", str(node_dir / "server.properties"),
        ]  # fmt: skip
        proc = ManagedProcess(f"kafka node {node.node_id}", argv, self.stdout_path(node.node_id)).start()
        self.pids[node.node_id] = proc.pid
        self._children[node.node_id] = proc

    def _await_ready(self, node_ids: list[int], timeout_s: float, log_offsets: dict[int, int] | None = None) -> None:
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
                        f"{tail(self.log_path(node_id))}\n{tail(self.stdout_path(node_id), 15)}"
                    )
                since = self._log_since(node_id, offsets.get(node_id, 0))
                if since.find(STARTED_MARKER) >= 0:
                    pending.discard(node_id)
                elif since.find(FAILED_MARKER) >= 0:
                    raise ProcessFailed(
                        f"kafka node {node_id} gave up starting; last lines of its log:\n{tail(self.log_path(node_id))}"
                    )
            if pending and time.monotonic() > deadline:
                raise ProcessFailed(
                    f"kafka nodes {sorted(pending)} not RUNNING after {timeout_s:.0f} s; last lines of node "
                    f"{min(pending)}:\n{tail(self.log_path(min(pending)))}"
                )
            if pending:
                time.sleep(0.2)
        remaining = max(5.0, deadline - time.monotonic())
        self._await_brokers_in_metadata(set(self.pids), remaining)

    def _log_since(self, node_id: int, offset: int) -> str:
        try:
            with open(self.log_path(node_id), "rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

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

    def _create_scram_user(self, tls: TlsFiles) -> None:
        """Create the SCRAM-SHA-512 login through the internal PLAINTEXT listener; the password never hits argv."""
        from confluent_kafka.admin import (
            AdminClient,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        password = secrets.token_urlsafe(18)
        admin = AdminClient({"bootstrap.servers": self.spec.internal_bootstrap})
        upsert = UserScramCredentialUpsertion(
            SCRAM_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
        creds = ScramCredentials(SCRAM_USER, password, SCRAM_MECHANISM, str(tls.ca_file))
        _write_private(self.home / CREDENTIALS_FILE, json.dumps(asdict(creds)))

    # ---- status and stop ----------------------------------------------------------------------

    def is_running(self, node_id: int) -> bool:
        pid = self.pids.get(node_id)
        return pid is not None and pid_alive(pid)

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
        for pid in self.pids.values():
            if pid_alive(pid):
                for sig in (signal.SIGCONT, signal.SIGTERM):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
        for node_id, pid in self.pids.items():
            self._stop_node(node_id, pid, grace_s=20)
        self.pids.clear()
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

    def _stop_node(self, node_id: int, pid: int, grace_s: float) -> None:
        child = self._children.pop(node_id, None)
        if child is not None and child.pid == pid:
            child.stop(grace_s)
        else:
            stop_pid(pid, grace_s)

    # ---- faults -------------------------------------------------------------------------------

    def _signal(self, node_id: int, sig: signal.Signals) -> int:
        self.node(node_id)
        pid = self.pids.get(node_id)
        if pid is None or not pid_alive(pid):
            raise ClusterError(f"kafka node {node_id} is not running")
        os.kill(pid, sig)
        return pid

    def kill(self, node_id: int) -> None:
        """kill -9 one node: no controlled shutdown, as when a machine dies."""
        pid = self._signal(node_id, signal.SIGKILL)
        self._stop_node(node_id, pid, grace_s=0)  # reaps it if it is our child
        self.pids.pop(node_id, None)
        self.save()

    def pause(self, node_id: int) -> None:
        """SIGSTOP one node: its sockets stay open but nothing answers, as with a hung broker."""
        self._signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        self._signal(node_id, signal.SIGCONT)

    def restart(self, node_id: int, cache: Path, timeout_s: float = 180.0) -> None:
        """Start a node again with its existing data (stopping it first if it still runs) and await it: up to 3
        minutes by default, since on a loaded host a node took 91 s to register again with a slowed quorum."""
        node = self.node(node_id)
        pid = self.pids.pop(node_id, None)
        if pid is not None:
            self._stop_node(node_id, pid, grace_s=20)
        runtime = ensure_runtime(self.spec.kafka_version, cache)
        log = self.log_path(node_id)
        for attempt in (1, 2):
            offset = log.stat().st_size if log.exists() else 0
            self._start_node(runtime, node)
            self.save()
            try:
                self._await_ready([node_id], timeout_s, {node_id: offset})
                return
            except ProcessFailed:
                # One more start only when this one gave up registering (seen with a quorum slowed by a loaded host).
                if attempt == 2 or self._log_since(node_id, offset).find(FAILED_MARKER) < 0:
                    raise
                self._stop_node(node_id, self.pids.pop(node_id), grace_s=5)


def _tls() -> ModuleType:
    """The certificate code, imported only when a cluster needs TLS: it needs the `dev` extra's cryptography, and
    reading a running cluster's state (every command without a config does) must not."""
    require_dev_extra()
    return importlib.import_module("devstack.tls")
