"""The dev cluster's shape, and the broker config files it implies (pure: no processes, no files).

Every node runs KRaft combined mode (broker + controller) on 127.0.0.1 with a static voter set (or a KIP-853
dynamic one, whose voters can be added and removed), one rack per node (az-a, az-b, az-c), and thread pools sized
for a 2-core machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

RACKS = ("az-a", "az-b", "az-c")
SCRAM_MECHANISM = "SCRAM-SHA-512"
FAST_FENCING = (("broker.heartbeat.interval.ms", "500"), ("broker.session.timeout.ms", "4000"))
"""`ClusterSpec.broker_overrides` for fault tests: the controller fences a dead broker after 4 s instead of 9 s
(Kafka's defaults: heartbeat 2 s, session 9 s). Until the fence, acks=all writes on every partition that has the
dead broker in its ISR stall; the fence drops it from the ISRs and moves its leaderships. The canary's fault
tests are about who gets charged for that stall, not how long it lasts, so they shorten it. Not the dev
default: on a loaded 2-core machine a healthy broker could miss 4 s of heartbeats and be fenced."""


def enforcing_authorizer(admin_user: str) -> tuple[tuple[str, str], ...]:
    """`ClusterSpec.broker_overrides` for a SASL_SSL cluster that enforces ACLs (KRaft's StandardAuthorizer): no
    ACL means no access, except for the super users: the SCRAM admin login and `User:ANONYMOUS`, the principal of
    the PLAINTEXT controller and inter-broker listeners (loopback only) the brokers and the dev tooling use."""
    return (
        ("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
        ("allow.everyone.if.no.acl.found", "false"),
        ("super.users", f"User:ANONYMOUS;User:{admin_user}"),
    )


class Security(StrEnum):
    """How clients reach the dev cluster."""

    PLAINTEXT = "plaintext"
    SASL_SSL = "sasl_ssl"


@dataclass(frozen=True)
class NodeSpec:
    """One KRaft combined-mode node and its loopback ports."""

    node_id: int
    rack: str
    port: int
    """The client listener (PLAINTEXT or SASL_SSL)."""
    controller_port: int
    jmx_port: int
    internal_port: int | None = None
    """Inter-broker PLAINTEXT listener; only with SASL_SSL, where it also carries admin set-up."""
    extra_jvm_flags: tuple[str, ...] = ()
    """Appended to the node's JVM options (after ours, so they win), e.g. a `-javaagent:` for a benchmark."""
    slow_disk_ms: int | None = None
    """The node's log directory is a slow FUSE pass-through (devstack/slow_disk.py) that starts with this delay
    before every write and fsync; None: an ordinary directory."""
    directory_id: str | None = None
    """The metadata log directory's id (a Kafka Uuid) with a dynamic quorum: `--initial-controllers` names each
    voter by id and directory, and `kafka-metadata-quorum remove-controller` needs it; None with static voters."""


class JmxSecurity(StrEnum):
    """How the brokers' remote JMX is protected: nothing (loopback only), a login, or a login over TLS."""

    NONE = "none"
    AUTH = "auth"
    """Password and access files (read-only role)."""
    AUTH_TLS = "auth+tls"
    """The same login, with the JMX connector and its RMI registry over TLS."""


@dataclass(frozen=True)
class JmxAuthFiles:
    """The files a JMX-secured node reads; every one is mode 0600 because the JVM refuses a readable password
    file, and the TLS settings file holds the keystore password."""

    password_file: Path
    access_file: Path
    ssl_config_file: Path | None = None
    """`javax.net.ssl.keyStore*` for the JMX connector; None without TLS."""


@dataclass(frozen=True)
class TlsFiles:
    """Where a broker finds its keystore; the password lives in the properties file, never on a command line."""

    keystore: Path
    keystore_password: str
    ca_file: Path


@dataclass(frozen=True)
class ClusterSpec:
    cluster_id: str
    kafka_version: str
    security: Security
    nodes: tuple[NodeSpec, ...]
    jmx_security: JmxSecurity = JmxSecurity.NONE
    broker_overrides: tuple[tuple[str, str], ...] = ()
    """server.properties entries applied last (so they win) on every node, e.g. `FAST_FENCING`; written when the
    node files are, not kept in the state file (a restart reuses the files)."""
    extra_jars: tuple[str, ...] = ()
    """Jars appended to every node's classpath (a metrics reporter plugin, say); kept in the state file, since a
    restart from another process needs them for the classes its server.properties names."""
    dynamic_quorum: bool = False
    """KIP-853: the voters are formatted with `--initial-controllers` and found through
    `controller.quorum.bootstrap.servers` (kraft.version 1), so `kafka-metadata-quorum add-controller` and
    `remove-controller` work; False: the static `controller.quorum.voters` (kraft.version 0)."""

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def internal_bootstrap(self) -> str:
        """Where the dev tooling itself connects: the PLAINTEXT listener, internal or not."""
        return ",".join(f"127.0.0.1:{n.internal_port or n.port}" for n in self.nodes)

    @property
    def replication_factor(self) -> int:
        return min(3, len(self.nodes))

    @property
    def controller_servers(self) -> str:
        """Every node's controller listener (`--bootstrap-controller` of Kafka's tools)."""
        return ",".join(f"127.0.0.1:{n.controller_port}" for n in self.nodes)

    @property
    def initial_controllers(self) -> str:
        """The `--initial-controllers` argument of a dynamic quorum, the same for every node: id@host:port:directory."""
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}:{n.directory_id}" for n in self.nodes)


def render_server_properties(spec: ClusterSpec, node: NodeSpec, data_dir: Path, tls: TlsFiles | None) -> str:
    """server.properties for one node; `tls` is required when the cluster is SASL_SSL."""
    rf = spec.replication_factor
    min_isr = 2 if rf >= 3 else 1
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in spec.nodes)
    quorum = (
        {"controller.quorum.bootstrap.servers": spec.controller_servers}
        if spec.dynamic_quorum
        else {"controller.quorum.voters": voters}
    )
    lines = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        **quorum,
        "controller.listener.names": "CONTROLLER",
        "broker.rack": node.rack,
        "log.dirs": str(data_dir),
        "default.replication.factor": str(rf),
        "min.insync.replicas": str(min_isr),
        "num.partitions": str(len(spec.nodes)),
        "offsets.topic.replication.factor": str(rf),
        "offsets.topic.num.partitions": "6",  # default 50: slower to create, more MBeans, nothing gained here
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "3",
        "share.coordinator.state.topic.replication.factor": str(rf),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "group.initial.rebalance.delay.ms": "0",
        # KIP-392: a consumer with client.rack may fetch from a replica in its own rack (the canary's
        # closest-replica probe); consumers without client.rack still read from leaders.
        "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
        # 2-core sizing (4.x defaults: network 3, io 8, background 10)
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.segment.bytes": str(64 * 1024 * 1024),
        # A node restarted after kill -9 on a loaded host was refused (DUPLICATE_BROKER_REGISTRATION) for the whole
        # default 60 s and gave up starting, twice in a row; it keeps trying for up to 150 s instead.
        "initial.broker.registration.timeout.ms": "150000",
    }
    if spec.security is Security.PLAINTEXT:
        lines |= {
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
        }
    else:
        if tls is None or node.internal_port is None:
            raise ValueError("a SASL_SSL node needs TLS files and an internal port")
        jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        lines |= {
            "listeners": (
                f"SASL_SSL://127.0.0.1:{node.port},INTERNAL://127.0.0.1:{node.internal_port},"
                f"CONTROLLER://127.0.0.1:{node.controller_port}"
            ),
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{node.port},INTERNAL://127.0.0.1:{node.internal_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.keystore),
            "ssl.keystore.password": tls.keystore_password,
            "ssl.client.auth": "none",
        }
    lines |= dict(spec.broker_overrides)
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def render_log_config(kafka_major: int) -> str:
    """Broker logging to `${kafka.logs.dir}/server.log`: Log4j 2 properties for 4.x, reload4j for 3.x."""
    if kafka_major >= 4:
        return (
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = FILE\n"
            "appender.file.fileName = ${sys:kafka.logs.dir}/server.log\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = FILE\n"
            "logger.state.name = state.change.logger\n"
            "logger.state.level = WARN\n"
            "logger.config.name = org.apache.kafka.common.config.AbstractConfig\n"
            "logger.config.level = WARN\n"
        )
    return (
        "log4j.rootLogger=INFO, F\n"
        "log4j.appender.F=org.apache.log4j.FileAppender\n"
        "log4j.appender.F.File=${kafka.logs.dir}/server.log\n"
        "log4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        "log4j.logger.state.change.logger=WARN\n"
        "log4j.logger.org.apache.kafka.common.config.AbstractConfig=WARN\n"
    )


def render_jmx_management_properties(jmx_port: int, files: JmxAuthFiles) -> str:
    """`com.sun.management.config.file` for a JMX-secured node: every remote-JMX setting, so none is on argv.

    The JVM reads only `com.sun.management.*` keys here: `javax.net.ssl.keyStorePassword` in this file is ignored
    (measured on OpenJDK 17: the TLS handshake then fails for want of a key), so the keystore settings go in the
    file `com.sun.management.jmxremote.ssl.config.file` names, which the JMX agent loads itself.
    """
    lines = {
        "com.sun.management.jmxremote.port": str(jmx_port),
        "com.sun.management.jmxremote.rmi.port": str(jmx_port),
        "com.sun.management.jmxremote.host": "127.0.0.1",
        "com.sun.management.jmxremote.authenticate": "true",
        "com.sun.management.jmxremote.password.file": str(files.password_file),
        "com.sun.management.jmxremote.access.file": str(files.access_file),
        "com.sun.management.jmxremote.ssl": "false",
    }
    if files.ssl_config_file is not None:
        lines |= {
            "com.sun.management.jmxremote.ssl": "true",
            "com.sun.management.jmxremote.registry.ssl": "true",
            "com.sun.management.jmxremote.ssl.need.client.auth": "false",
            "com.sun.management.jmxremote.ssl.config.file": str(files.ssl_config_file),
        }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def render_jmx_ssl_properties(tls: TlsFiles) -> str:
    """The JMX connector's keystore (the broker certificate of the dev CA) and its password."""
    return (
        f"javax.net.ssl.keyStore={tls.keystore}\n"
        "javax.net.ssl.keyStoreType=PKCS12\n"
        f"javax.net.ssl.keyStorePassword={tls.keystore_password}\n"
    )


def jvm_flags(
    kafka_major: int,
    jmx_port: int,
    log_config: Path,
    logs_dir: Path,
    jmx_config_file: Path | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """JVM options: a small G1 heap for 2 cores, C1 only for a fast start, JMX on loopback with one port.

    With `jmx_config_file` (a secured node) the JMX settings come from that file instead of the command line.
    """
    logging = (
        [f"-Dlog4j2.configurationFile={log_config}"]
        if kafka_major >= 4
        else [f"-Dlog4j.configuration=file:{log_config}"]
    )
    if jmx_config_file is not None:
        jmx = [f"-Dcom.sun.management.config.file={jmx_config_file}"]
    else:
        jmx = [
            "-Dcom.sun.management.jmxremote=true",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false",
            f"-Dcom.sun.management.jmxremote.port={jmx_port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
            "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        ]
    return [
        "-Xms256m",
        "-Xmx512m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        *jmx,
        "-Djava.rmi.server.hostname=127.0.0.1",
        f"-Dkafka.logs.dir={logs_dir}",
        *logging,
        *extra,
    ]


# ---- data shape: topics, partitions and committing groups a dev cluster is filled with --------------------------

_T = TypeVar("_T")

FD_LIMIT_SHARE = 0.75
"""Part of the open-files limit a broker's partitions may take: each replica keeps its active segment open, and
the rest is left for sockets, jars and the metadata log."""


@dataclass(frozen=True)
class DataShape:
    """What `dev up` creates after the brokers start: `topics` topics of `partitions_per_topic` partitions at the
    cluster's replication factor, and `groups` consumer groups, group i committing offsets on topic i mod topics."""

    topics: int = 0
    partitions_per_topic: int = 1
    groups: int = 0

    @property
    def partitions(self) -> int:
        return self.topics * self.partitions_per_topic

    @property
    def is_empty(self) -> bool:
        return self.topics == 0 and self.groups == 0

    def topic_names(self) -> list[str]:
        width = max(4, len(str(self.topics - 1)))
        return [f"shape-{t:0{width}d}" for t in range(self.topics)]

    def group_topics(self) -> list[tuple[str, str]]:
        """(group, the topic it commits on): the groups spread evenly over the topics."""
        names = self.topic_names()
        width = max(4, len(str(self.groups - 1)))
        return [(f"shape-group-{g:0{width}d}", names[g % len(names)]) for g in range(self.groups)]

    def replicas_per_broker(self, brokers: int) -> int:
        """Partition replicas each broker hosts (replication min(3, brokers), spread evenly)."""
        return -(-self.partitions * min(3, brokers) // brokers)

    def heap_mb(self, brokers: int) -> int:
        """Broker heap: the dev default (512 MB) up to 1,000 replicas a broker, then 0.1 MB more per replica
        (partition objects, their log and index handles and about ten metrics beans each)."""
        return max(512, 412 + self.replicas_per_broker(brokers) // 10)


PROFILES = {"small": DataShape(), "large": DataShape(topics=1000, partitions_per_topic=10, groups=1000)}
"""Named shapes for `dev up --profile`; `large` is the 10,000-partition, 1,000-group cluster of bench/."""


def data_shape(
    profile: str | None, topics: int | None, partitions_per_topic: int | None, groups: int | None
) -> DataShape:
    """The shape `dev up` options ask for: a profile, overridden option by option; ValueError naming the option."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"--profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    base = PROFILES[profile or "small"]
    shape = DataShape(
        topics=base.topics if topics is None else topics,
        partitions_per_topic=base.partitions_per_topic if partitions_per_topic is None else partitions_per_topic,
        groups=base.groups if groups is None else groups,
    )
    for option, value, low in (
        ("--topics", shape.topics, 0),
        ("--partitions-per-topic", shape.partitions_per_topic, 1),
        ("--groups", shape.groups, 0),
    ):
        if value < low:
            raise ValueError(f"{option} must be at least {low}, not {value}")
    if shape.groups and not shape.topics:
        raise ValueError(f"--groups {shape.groups} needs topics to commit on: give --topics too")
    return shape


def check_fits(shape: DataShape, brokers: int, open_files_limit: int) -> None:
    """ValueError when a broker could not open every replica's segment under the open-files limit (`ulimit -n`)."""
    per_broker = shape.replicas_per_broker(brokers)
    allowed = int(open_files_limit * FD_LIMIT_SHARE)
    if per_broker > allowed:
        raise ValueError(
            f"--topics {shape.topics} x --partitions-per-topic {shape.partitions_per_topic} puts {per_broker:,} "
            f"replicas on each of {brokers} broker(s), more than {allowed:,} ({FD_LIMIT_SHARE:.0%} of the "
            f"open-files limit {open_files_limit:,}); raise `ulimit -n` or ask for fewer partitions"
        )


def batched(items: Sequence[_T], size: int) -> list[Sequence[_T]]:
    """`items` in runs of at most `size`: topics are created a batch at a time so the controller keeps up."""
    return [items[i : i + size] for i in range(0, len(items), size)]
