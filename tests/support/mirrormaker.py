"""A real MirrorMaker 2 (dedicated mode, `org.apache.kafka.connect.mirror.MirrorMaker`) between two local
clusters, from the cached client-tools classpath: the mirror pipeline the canary's mirror mode watches.

One JVM replicates `source -> target`; its Connect state lives in internal topics on the target, so a stop and a
start resume from the last flushed offsets. Readiness is proven, not guessed: a marker record produced on the
source must arrive in its mirrored topic on the target.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Self

from devstack.runtime import DEFAULT_VERSION, ensure_tools
from pulse.errors import ConfigError, ProcessFailed
from pulse.paths import cache_dir
from pulse.ports import LOOPBACK
from pulse.process import ManagedProcess, tail

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
READY_TOPIC = "pulse-mm2-ready"
"""A one-partition topic on the source that only carries readiness markers, so the monitor topic stays clean."""
ReplicationPolicy = Literal["default", "identity"]
_POLICY_CLASS = {
    "default": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "identity": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
}
_ALIAS = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class MirrorSpec:
    """What one MirrorMaker 2 instance replicates and how eagerly; times are short because tests watch it."""

    source_bootstrap: str
    target_bootstrap: str
    topics: tuple[str, ...]
    """Topic names or regexes (MM2's `topics` list) on the source; the readiness topic is added to them."""
    source_brokers: int = 1
    target_brokers: int = 1
    """Broker counts: internal topics get replication factor min(3, brokers) of the cluster that holds them."""
    source_alias: str = "source"
    target_alias: str = "target"
    policy: ReplicationPolicy = "default"
    """`default` names the copy `<source_alias>.<topic>` on the target (and so cannot loop); `identity` keeps the
    name, for one-way pipelines only."""
    heartbeats: bool = False
    """MM2's own `heartbeats` topic on the target; off by default because the canary is the heartbeat that also
    proves records flow, and every connector costs the JVM a task."""
    refresh_interval_s: int = 5
    """How soon a new or grown source topic is noticed (MM2 default 600 s)."""
    offset_flush_interval_ms: int = 1000
    """How often replicated source offsets are committed (Connect default 60 s): after a restart MM2 re-copies at
    most this much, which the canary sees as duplicates."""
    source_client: Mapping[str, str] = field(default_factory=dict)
    target_client: Mapping[str, str] = field(default_factory=dict)
    """Extra Java client settings per cluster (security); written to the 0600 properties file, never to argv."""

    def __post_init__(self) -> None:
        for name in ("source_alias", "target_alias"):
            if not _ALIAS.fullmatch(getattr(self, name)):
                raise ConfigError(f"MirrorSpec.{name}: {getattr(self, name)!r} may only hold letters, digits, _ and -")
        if self.source_alias == self.target_alias:
            raise ConfigError(f"MirrorSpec: source and target alias are both {self.source_alias!r}")
        if not self.topics:
            raise ConfigError("MirrorSpec.topics: name at least one source topic to mirror")
        for name in ("source_brokers", "target_brokers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"MirrorSpec.{name}: must be at least 1, got {getattr(self, name)}")


def mirrored_topic(topic: str, source_alias: str = "source", policy: ReplicationPolicy = "default") -> str:
    """The name MM2 gives `topic`'s copy on the target cluster under `policy`."""
    return f"{source_alias}.{topic}" if policy == "default" else topic


def render_mm2_properties(spec: MirrorSpec) -> str:
    """mm2.properties for a one-way `source -> target` flow (pure). Every internal topic lives on the target."""
    src, dst = spec.source_alias, spec.target_alias
    rf = str(min(3, spec.target_brokers))
    lines: dict[str, str] = {
        "clusters": f"{src}, {dst}",
        f"{src}.bootstrap.servers": spec.source_bootstrap,
        f"{dst}.bootstrap.servers": spec.target_bootstrap,
        f"{src}->{dst}.enabled": "true",
        f"{src}->{dst}.topics": ", ".join([*spec.topics, READY_TOPIC]),
        f"{dst}->{src}.enabled": "false",
        "replication.policy.class": _POLICY_CLASS[spec.policy],
        "tasks.max": "1",
        "plugin.discovery": "service_load",  # every MM2 plugin has a manifest; skips a 2 s classpath scan per herder
        # Remote topics and Connect's config/offset/status topics are created on the target.
        "replication.factor": rf,
        "config.storage.replication.factor": rf,
        "offset.storage.replication.factor": rf,
        "status.storage.replication.factor": rf,
        "heartbeats.topic.replication.factor": rf,
        "checkpoints.topic.replication.factor": rf,
        "offset-syncs.topic.replication.factor": rf,
        "offset-syncs.topic.location": "target",
        # Only records matter here: no consumer group is translated (turning checkpoints or offset syncs off
        # instead makes MM2 4.x reject its checkpoint connector's config with an ERROR at every start), and no
        # ACLs are synced (the dev clusters have no authorizer).
        "groups.exclude": ".*",
        "sync.topic.acls.enabled": "false",
        "emit.heartbeats.enabled": "true" if spec.heartbeats else "false",
        f"{dst}->{src}.emit.heartbeats.enabled": "false",
        "emit.heartbeats.interval.seconds": "1",
        "refresh.topics.interval.seconds": str(spec.refresh_interval_s),
        "sync.topic.configs.interval.seconds": str(spec.refresh_interval_s),
        "offset.flush.interval.ms": str(spec.offset_flush_interval_ms),
        # A worker that died uncleanly would otherwise keep its tasks unassigned for 5 minutes.
        "scheduled.rebalance.max.delay.ms": "0",
        # MM2's source consumer starts at the beginning of a newly seen topic, so nothing produced before the
        # first poll is missed; the copy keeps the source record's timestamp and headers.
        f"{src}.consumer.auto.offset.reset": "earliest",
    }
    for prefix, extra in ((src, spec.source_client), (dst, spec.target_client)):
        lines |= {f"{prefix}.{key}": value for key, value in extra.items()}
    return "".join(f"{key} = {value}\n" for key, value in lines.items())


def render_log_config() -> str:
    """Log4j 2 properties: everything to stdout (which ManagedProcess writes to the log file), clients quieter."""
    return (
        "status = warn\n"
        "appender.out.type = Console\n"
        "appender.out.name = OUT\n"
        "appender.out.layout.type = PatternLayout\n"
        "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\n"
        "rootLogger.appenderRef.out.ref = OUT\n"
        "logger.clients.name = org.apache.kafka.clients\n"
        "logger.clients.level = WARN\n"
        "logger.config.name = org.apache.kafka.common.config\n"
        "logger.config.level = WARN\n"
    )


def jvm_flags(log_config: Path, jmx_port: int | None) -> list[str]:
    """A small heap and C1 only, as for the dev brokers; JMX, when asked for, on loopback with one port."""
    flags = [
        "-Xms128m",
        "-Xmx384m",
        "-XX:+UseG1GC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log_config}",
    ]
    if jmx_port is not None:
        flags += [
            "-Dcom.sun.management.jmxremote=true",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false",
            f"-Dcom.sun.management.jmxremote.port={jmx_port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
            f"-Dcom.sun.management.jmxremote.host={LOOPBACK}",
            f"-Djava.rmi.server.hostname={LOOPBACK}",
        ]
    return flags


class MirrorMaker:
    """One MM2 process in `workdir`; `start`, `stop` and `start` again resume replication where it stopped."""

    name = "mirrormaker2"

    def __init__(
        self,
        workdir: Path,
        spec: MirrorSpec,
        kafka_version: str = DEFAULT_VERSION,
        cache: Path | None = None,
        jmx_port: int | None = None,
    ) -> None:
        self.workdir = workdir
        self.spec = spec
        self.kafka_version = kafka_version
        self.cache = cache if cache is not None else cache_dir()
        self.jmx_port = jmx_port
        self.process: ManagedProcess | None = None
        self.startup_s: float | None = None
        """Seconds from launch until a marker crossed, for test reports."""

    @property
    def log_path(self) -> Path:
        return self.workdir / "mirrormaker2.log"

    @property
    def properties_path(self) -> Path:
        return self.workdir / "mm2.properties"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise ProcessFailed(f"{self.name}: not started")
        return self.process.pid

    def mirrored(self, topic: str) -> str:
        """`topic`'s name on the target cluster."""
        return mirrored_topic(topic, self.spec.source_alias, self.spec.policy)

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def start(self, timeout_s: float = 180.0) -> Self:
        """Write the config, launch the JVM and wait until a marker produced on the source reaches the target."""
        if self.running():
            raise ProcessFailed(f"{self.name} is already running (pid {self.pid})")
        runtime = ensure_tools(self.kafka_version, self.cache)
        self.workdir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.properties_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # may hold passwords
        with os.fdopen(fd, "w") as out:
            out.write(render_mm2_properties(self.spec))
        log_config = self.workdir / "log4j2.properties"
        log_config.write_text(render_log_config())
        self._create_ready_topic()
        argv = [
            "java", *jvm_flags(log_config, self.jmx_port), "-cp", runtime.classpath,
            MAIN_CLASS, str(self.properties_path), "--clusters", self.spec.target_alias,
        ]  # fmt: skip
        self.process = ManagedProcess(self.name, argv, self.log_path, cwd=self.workdir)
        started = time.monotonic()
        try:
            self.process.start()
            self.wait_flowing(timeout_s)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        """SIGTERM by PID (Connect commits its offsets and leaves its group), SIGKILL after the grace period."""
        if self.process is not None:
            self.process.stop(grace_s=30)

    def restart(self, timeout_s: float = 180.0) -> Self:
        self.stop()
        return self.start(timeout_s)

    def wait_flowing(self, timeout_s: float) -> None:
        """Produce a unique marker on the source's readiness topic and wait until its copy is read on the target;
        ProcessFailed with the log tail if MM2 exits or the marker does not cross in time."""
        from confluent_kafka import Consumer, Producer, TopicPartition

        marker = uuid.uuid4().hex.encode()
        deadline = time.monotonic() + timeout_s
        producer = Producer(
            {"bootstrap.servers": self.spec.source_bootstrap, "acks": "all", "linger.ms": 0, "log_level": 0}
        )
        producer.produce(READY_TOPIC, marker, partition=0)
        if producer.flush(30) != 0:
            raise ProcessFailed(f"{self.name}: could not produce a readiness marker to {READY_TOPIC} on the source")
        consumer = Consumer(
            {
                "bootstrap.servers": self.spec.target_bootstrap,
                "group.id": f"pulse-mm2-ready-{marker.decode()}",
                "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000,
                "log_level": 0,
            }
        )
        try:
            consumer.assign([TopicPartition(self.mirrored(READY_TOPIC), 0, 0)])  # offset 0: read every marker
            while True:
                if self.process is not None and not self.process.running():
                    raise ProcessFailed(
                        f"{self.name} exited (status {self.process.popen.returncode if self.process.popen else None})"
                        f" before records flowed; last lines of {self.log_path}:\n{tail(self.log_path)}"
                    )
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None and msg.value() == marker:
                    return
                if time.monotonic() > deadline:
                    raise ProcessFailed(
                        f"{self.name}: a marker produced on {self.spec.source_alias}/{READY_TOPIC} did not reach "
                        f"{self.spec.target_alias}/{self.mirrored(READY_TOPIC)} within {timeout_s:.0f} s; last lines "
                        f"of {self.log_path}:\n{tail(self.log_path)}"
                    )
        finally:
            consumer.close()

    def _create_ready_topic(self) -> None:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.spec.source_bootstrap, "log_level": 0})
        rf = min(3, self.spec.source_brokers)
        future = admin.create_topics([NewTopic(READY_TOPIC, 1, rf)])[READY_TOPIC]
        try:
            future.result(timeout=30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ProcessFailed(f"{self.name}: cannot create {READY_TOPIC} on the source: {exc}") from exc

    def __repr__(self) -> str:
        state = f"pid={self.process.pid}" if self.process and self.process.popen else "not started"
        return f"MirrorMaker({self.spec.source_alias}->{self.spec.target_alias}, {state})"
