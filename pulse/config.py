"""The kafka-pulse config file: YAML -> `${VAR}` substitution -> pydantic models, refused whole before anything starts.

Every component receives its section of `PulseConfig`; none reads the file or the environment itself.
"""

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pulse.envsubst import config_problem, describe_error, format_key_path, read_tree, substitute
from pulse.errors import ConfigError

_NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""Host names, IPv4 addresses and cluster names."""
_TOPIC_NAME = re.compile(r"[A-Za-z0-9_.-]{1,249}")


def split_host_port(text: str) -> tuple[str, int]:
    """Split `host:port` (or `[v6addr]:port`) into its parts; ValueError says what is wrong and how to write it."""
    value = text.strip()
    if value.startswith("["):
        host, sep, port = value[1:].partition("]:")
    else:
        host, sep, port = value.rpartition(":")
        if ":" in host:
            raise ValueError(f"{text!r} is not host:port; write IPv6 addresses in brackets, e.g. [::1]:9092")
        if host and not _NAME.fullmatch(host):
            raise ValueError(f"{text!r} is not host:port: {host!r} is not a host name or address")
    if not sep or not host:
        raise ValueError(f"{text!r} is not host:port (e.g. kafka1:9092)")
    if not port.isascii() or not port.isdigit():
        raise ValueError(f"{text!r} is not host:port: port {port!r} is not a number")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: port {int(port)} is out of range 1-65535")
    return host, int(port)


def _check_host_port(text: str) -> str:
    split_host_port(text)
    return text.strip()


def _check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    return pattern


def _check_existing_file(path: Path, info: ValidationInfo) -> Path:
    """Resolve a relative path against the config file's directory (as Prometheus does) and require a file."""
    base_dir = info.context.get("base_dir") if isinstance(info.context, dict) else None
    resolved = base_dir / path if isinstance(base_dir, Path) and not path.is_absolute() else path
    if not resolved.is_file():
        state = "is not a file" if resolved.exists() else "does not exist"
        raise ValueError(f"file '{resolved}' {state}")
    return resolved


def _check_http_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an http(s) URL, e.g. http://127.0.0.1:9093")
    return url.rstrip("/")


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


HostPort = Annotated[str, AfterValidator(_check_host_port)]
"""`host:port`, port 1-65535."""
Regex = Annotated[str, AfterValidator(_check_regex)]
"""A Python regular expression matched with `re.search` (anchor with ^ and $ as in Burrow's allow/deny lists)."""
ExistingFile = Annotated[Path, AfterValidator(_check_existing_file)]
"""A file that must exist; relative paths are relative to the config file's directory."""
HttpUrl = Annotated[str, AfterValidator(_check_http_url)]


class _Section(BaseModel):
    """Base of every config model: unknown keys are refused and a loaded config cannot be changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- clusters -----------------------------------------------------------------------------------------------


class SaslConfig(_Section):
    """SASL credentials; only sent when the protocol is SASL_PLAINTEXT or SASL_SSL."""

    mechanism: Annotated[Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], BeforeValidator(_upper)]
    username: str = Field(min_length=1)
    password: SecretStr


class TlsConfig(_Section):
    """TLS to the brokers: CA to trust, an optional client certificate, and hostname verification."""

    ca_file: ExistingFile | None = None
    """PEM CA bundle; the system trust store is used when absent."""
    cert_file: ExistingFile | None = None
    """PEM client certificate for mutual TLS; needs `key_file`."""
    key_file: ExistingFile | None = None
    key_password: SecretStr | None = None
    verify_hostname: bool = True
    """Check the broker certificate's name against the host we connect to; turn off only for test clusters."""

    @model_validator(mode="after")
    def _cert_and_key_together(self) -> Self:
        if self.cert_file is not None and self.key_file is None:
            raise config_problem("required when cert_file is set (the client certificate's private key)", ("key_file",))
        if self.key_file is not None and self.cert_file is None:
            raise config_problem("required when key_file is set (the client certificate)", ("cert_file",))
        if self.key_password is not None and self.key_file is None:
            raise config_problem("key_password is set but there is no key_file it unlocks", ("key_password",))
        return self


class SecurityConfig(_Section):
    """How clients authenticate and encrypt; contradictory combinations are refused rather than guessed."""

    protocol: Annotated[Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], BeforeValidator(_upper)] = (
        "PLAINTEXT"
    )
    sasl: SaslConfig | None = Field(default=None, validate_default=True)
    tls: TlsConfig | None = Field(default=None, validate_default=True)

    # Field validators (not a model validator) so each contradiction is reported at its own key, all in one pass;
    # `info.data` lacks `protocol` when it was itself invalid, and then there is nothing to compare.
    @field_validator("sasl")
    @classmethod
    def _sasl_matches_protocol(cls, sasl: SaslConfig | None, info: ValidationInfo) -> SaslConfig | None:
        protocol = info.data.get("protocol")
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL") and sasl is None:
            raise config_problem(f"required when protocol is {protocol}: give mechanism, username and password")
        if protocol in ("PLAINTEXT", "SSL") and sasl is not None:
            raise config_problem(f"protocol {protocol} does not use SASL; set protocol to SASL_{protocol}")
        return sasl

    @field_validator("tls")
    @classmethod
    def _tls_matches_protocol(cls, tls: TlsConfig | None, info: ValidationInfo) -> TlsConfig | None:
        protocol = info.data.get("protocol")
        if protocol in ("PLAINTEXT", "SASL_PLAINTEXT") and tls is not None:
            fix = "SSL" if protocol == "PLAINTEXT" else "SASL_SSL"
            raise config_problem(f"protocol {protocol} does not use TLS; set protocol to {fix}")
        return tls


class JmxBrokerConfig(_Section):
    """One broker's JMX endpoint (remote JMX over RMI), scraped by the collectors."""

    broker_id: int = Field(ge=0)
    host: str = "127.0.0.1"
    port: int = Field(ge=1, le=65535)
    username: str | None = None
    password: SecretStr | None = None
    ssl: bool = False
    """JMX over TLS (`com.sun.management.jmxremote.ssl=true` on the broker); trust comes from `jmx.truststore`."""

    @model_validator(mode="after")
    def _credentials_in_pairs(self) -> Self:
        if self.password is not None and self.username is None:
            raise config_problem("required when password is set", ("username",))
        if self.username is not None and self.password is None:
            raise config_problem("required when username is set", ("password",))
        return self


class JmxConfig(_Section):
    """JMX endpoints of the brokers; absent means the collectors only use the Admin API."""

    brokers: list[JmxBrokerConfig] = []
    timeout_s: float = Field(default=5.0, gt=0)
    """Per-broker limit for one scrape; a slower broker is reported as unknown for that scrape."""
    truststore: ExistingFile | None = None
    """JKS or PKCS12 trust store for brokers with `ssl: true` (one per JVM, so one for all brokers)."""
    truststore_password: SecretStr | None = None

    @field_validator("brokers")
    @classmethod
    def _unique_broker_ids(cls, brokers: list[JmxBrokerConfig]) -> list[JmxBrokerConfig]:
        first: dict[int, int] = {}
        for index, broker in enumerate(brokers):
            if broker.broker_id in first:
                where = f"brokers[{first[broker.broker_id]}]"
                raise config_problem(f"duplicate broker_id {broker.broker_id} (also in {where})", (index, "broker_id"))
            first[broker.broker_id] = index
        return brokers


def _split_servers(value: Any) -> Any:
    """Accept the librdkafka spelling `a:9092,b:9092` as well as a YAML list."""
    if isinstance(value, str):
        return [part for part in (p.strip() for p in value.split(",")) if part]
    return value


class ClusterConfig(_Section):
    """A Kafka cluster to monitor and how to reach it."""

    name: str
    """Unique; used in metric labels and in the Burrow-compatible API paths."""
    bootstrap_servers: Annotated[list[HostPort], BeforeValidator(_split_servers)]
    security: SecurityConfig = SecurityConfig()
    jmx: JmxConfig | None = None

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not _NAME.fullmatch(name):
            raise ValueError(f"{name!r} may only contain letters, digits, '_', '.' and '-'")
        return name

    @field_validator("bootstrap_servers")
    @classmethod
    def _at_least_one_server(cls, servers: list[str]) -> list[str]:
        if not servers:
            raise ValueError("at least one host:port is required")
        return servers


# --- components ---------------------------------------------------------------------------------------------


# --- collectors.clients: JVM clients scraped over JMX (issue #3 point 7) ---


class JmxClientConfig(_Section):
    """A JVM Kafka client's JMX endpoint (producer, consumer, MirrorMaker 2), scraped for client-side metrics."""

    name: str
    """Unique among `collectors.clients`; the `client_target` label of every sample and health series."""
    host: str = "127.0.0.1"
    port: int = Field(ge=1, le=65535)
    username: str | None = None
    password: SecretStr | None = None
    ssl: bool = False
    """JMX over TLS (`com.sun.management.jmxremote.ssl=true` in the client's JVM); trust from `truststore`."""
    truststore: ExistingFile | None = None
    truststore_password: SecretStr | None = None
    cluster: str | None = None
    """The Kafka cluster the client talks to: a `cluster` label on its samples; absent means no such label."""
    timeout_s: float = Field(default=5.0, gt=0)
    """Limit for one scrape of this client; a slower answer counts as a failed scrape (`reason="timeout"`)."""

    @field_validator("name", "cluster")
    @classmethod
    def _valid_name(cls, name: str | None) -> str | None:
        if name is not None and not _NAME.fullmatch(name):
            raise ValueError(f"{name!r} may only contain letters, digits, '_', '.' and '-'")
        return name

    @model_validator(mode="after")
    def _credentials_in_pairs(self) -> Self:
        if self.password is not None and self.username is None:
            raise config_problem("required when password is set", ("username",))
        if self.username is not None and self.password is None:
            raise config_problem("required when username is set", ("password",))
        if self.truststore is not None and not self.ssl:
            raise config_problem("set ssl: true to use a trust store (JMX over TLS)", ("ssl",))
        return self


def _unique_client_names(clients: list[JmxClientConfig]) -> list[JmxClientConfig]:
    first: dict[str, int] = {}
    for index, client in enumerate(clients):
        if client.name in first:
            raise config_problem(f"duplicate client name {client.name!r} (also clients[{first[client.name]}])",
                                 (index, "name"))  # fmt: skip
        first[client.name] = index
    return clients


# --- end of collectors.clients ---


class CollectorsConfig(_Section):
    """JMX and Admin API collectors (collectors/)."""

    enabled: bool = True
    scrape_interval_s: float = Field(default=15.0, gt=0)
    transport: Literal["jmxquery", "jpype"] = "jpype"
    """`jpype` keeps one JMX connection per broker in-process: a tenth of jmxquery's scrape time and CPU, and JMX login
    and TLS (docs/benchmarks.md); `jmxquery` forks a JVM per scrape and cannot take credentials off its argv."""
    topic_metrics: Literal["off", "topic", "partition"] = "off"
    """Per-topic JMX beans (`topic`: BrokerTopicMetrics per topic; `partition`: also Log and Partition beans per
    partition), filtered by `topic_allow`/`topic_deny`; off by default because they grow with the topic count."""
    topic_allow: Regex = ".*"
    topic_deny: Regex | None = None
    clients: Annotated[list[JmxClientConfig], AfterValidator(_unique_client_names)] = []
    """JVM clients to scrape over JMX (producer, consumer and MirrorMaker 2 metrics), with the same transport."""


# --- canary.sli_log and canary.mirror (issue #4 points 7 and 6) ---


class SliLogConfig(_Section):
    """Where and how the canary writes one Parquet row per settled probe (schema: docs/sli-log.md)."""

    enabled: bool = True
    dir: Path | None = None
    """The log's root (`date=YYYY-MM-DD/part-*.parquet` below it); None means `<state dir>/sli/canary`.
    Relative paths are relative to the process's working directory."""
    flush_interval_s: float = Field(default=60.0, gt=0, le=60)
    """Rows reach disk at least this often (and on stop); at most a minute, so the SLO engine is never further
    behind than that."""
    max_bytes: int = Field(default=1 << 30, ge=1 << 20)
    """The log's size bound: the oldest files are removed first once it is exceeded (at least 1 MiB)."""
    queue_size: int = Field(default=100_000, ge=1)
    """Rows waiting for the writer at most; beyond it rows are dropped and counted, probes never wait."""


class CanaryMirrorConfig(_Section):
    """Mirror mode (issue #4 point 6): probes produced on `source`, read back from their MirrorMaker copy on
    `target`, for replication latency and loss per source partition."""

    enabled: bool = False
    source: str | None = None
    """The cluster probes are produced on; None means `canary.cluster` (or the only configured cluster)."""
    target: str | None = None
    """The cluster the mirrored topic is read on; required when enabled."""
    topic: str = "pulse-canary-mirror"
    """The monitor topic on the source; MirrorMaker must replicate it. Not `__`-prefixed: MirrorMaker 2's default
    `topics.exclude` skips such names."""
    target_topic: str | None = None
    """Its copy's name on the target; None means `<source_alias>.<topic>` (MM2's DefaultReplicationPolicy)."""
    source_alias: str | None = None
    """The source's alias in MirrorMaker's config; None means the source cluster's name here."""
    loss_deadline_s: float = Field(default=60.0, gt=0)
    """A probe acknowledged on the source and not read on the target within this long is lost."""

    @field_validator("topic", "target_topic")
    @classmethod
    def _valid_topic(cls, topic: str | None) -> str | None:
        if topic is not None and (not _TOPIC_NAME.fullmatch(topic) or topic in (".", "..")):
            raise ValueError(f"{topic!r} is not a Kafka topic name (1-249 of letters, digits, '.', '_', '-')")
        return topic

    @model_validator(mode="after")
    def _target_when_enabled(self) -> Self:
        if self.enabled and self.target is None:
            raise config_problem("required when mirror mode is enabled: the cluster MirrorMaker copies to", ("target",))
        if self.target is not None and self.target == self.source:
            raise config_problem(f"{self.target!r} is also the source; mirror mode reads another cluster", ("target",))
        return self

    def mirrored_topic(self, source_name: str) -> str:
        """The topic read on the target when the source cluster is called `source_name` here."""
        return self.target_topic or f"{self.source_alias or source_name}.{self.topic}"


# --- end of canary.sli_log and canary.mirror ---


class CanaryConfig(_Section):
    """Synthetic producer/consumer (canary/): probes every partition of a monitor topic each interval."""

    enabled: bool = True
    cluster: str | None = None
    """Which configured cluster to probe; None means the only one (or the local dev cluster)."""
    topic: str = "__pulse_canary"
    interval_s: float = Field(default=1.0, gt=0)
    """One probe per partition per interval."""
    client_rack: str | None = None
    """The canary's own rack (`client.rack`), so probes can be labelled same-rack or cross-rack."""
    replication_factor: int | None = Field(default=None, ge=1)
    """Of the monitor topic when the canary creates it; None means min(3, brokers)."""
    min_insync_replicas: int | None = Field(default=None, ge=1)
    """None means replication_factor - 1 (at least 1), so one broker down still accepts acks=all probes."""
    partitions_per_broker: float = Field(default=1.0, gt=0)
    """The topic keeps at least ceil(brokers x this) partitions."""
    manage_topic: bool = True
    """Create, extend and re-balance the monitor topic; false only reports what is wrong (metric and log)."""
    reconcile_interval_s: float = Field(default=60.0, gt=0)
    """How often the topic's placement is checked against the live brokers."""
    min_change_interval_s: float = Field(default=600.0, ge=0)
    """At least this long between two placement changes, so a flapping broker cannot make the canary thrash
    the cluster with reassignments (Strimzi canary #221, #28)."""
    latency_slo_s: float = Field(default=2.0, gt=0)
    """A probe not acknowledged within this is bad (`produce_ok` false) and counts against availability as soon
    as it is this old. It is also the broker's ack timeout for the probe (`request.timeout.ms`)."""
    delivery_timeout_s: float = Field(default=30.0, gt=0)
    """How long the client keeps trying a probe before giving it up (librdkafka's `message.timeout.ms`). Longer
    than a broker fence (`broker.session.timeout.ms`, 9 s by default): a probe given up in flight makes the
    idempotent producer bump its epoch and re-send what it was still retrying, which writes duplicates (counted)."""
    loss_deadline_s: float = Field(default=30.0, gt=0)
    """An acknowledged probe not read back within this long after its acknowledgement is lost."""
    availability_window_s: float = Field(default=60.0, gt=0)
    """The sliding window of the per-broker availability gauges."""
    connection_check_interval_s: float = Field(default=10.0, gt=0)
    """How often each broker is asked for metadata on its own connection."""
    connection_check_timeout_s: float = Field(default=2.0, gt=0)
    metadata_refresh_s: float = Field(default=2.0, gt=0)
    """How often partition leaders and in-sync replicas are re-read, to attribute probes to brokers."""
    log_check_interval_s: float = Field(default=10.0, gt=0)
    """How often each partition's log start and end offsets are compared with the offsets probes were acknowledged
    at: an acknowledged offset no longer in the log was truncated (or deleted before it was read)."""
    commit_group: str | None = None
    """Consumer group whose offset is committed each interval to probe the group coordinator; None means
    `<topic>-<instance id>`, one group per canary instance."""
    closest_replica_probe: bool = False
    """Also read with `client.rack` set, from the closest replica (KIP-392): needs `client_rack` and brokers
    with `replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector`."""
    listen: HostPort | None = None
    """Where `kafka-pulse canary` serves /metrics; None means `http.listen`."""
    sli_log: SliLogConfig = SliLogConfig()
    """The Parquet SLI event log (issue #4 point 7)."""
    mirror: CanaryMirrorConfig = CanaryMirrorConfig()
    """Mirror mode across two clusters (issue #4 point 6)."""

    @field_validator("topic")
    @classmethod
    def _valid_topic(cls, topic: str) -> str:
        if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
            raise ValueError(f"{topic!r} is not a Kafka topic name (1-249 of letters, digits, '.', '_', '-')")
        return topic

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        rf, min_isr = self.replication_factor, self.min_insync_replicas
        if rf is not None and min_isr is not None and min_isr > rf:
            raise config_problem(
                f"{min_isr} is more than replication_factor {rf}: no acks=all probe could ever succeed",
                ("min_insync_replicas",),
            )
        if self.loss_deadline_s < self.latency_slo_s:
            raise config_problem(
                f"{self.loss_deadline_s:g} s is shorter than latency_slo_s {self.latency_slo_s:g} s: a probe "
                "would count as lost before a read-back as slow as the produce SLO allows",
                ("loss_deadline_s",),
            )
        if self.delivery_timeout_s < self.latency_slo_s:
            raise config_problem(
                f"{self.delivery_timeout_s:g} s is shorter than latency_slo_s {self.latency_slo_s:g} s: probes "
                "would be given up before they could be judged",
                ("delivery_timeout_s",),
            )
        if self.availability_window_s < self.interval_s:
            raise config_problem(
                f"{self.availability_window_s:g} s is shorter than interval_s {self.interval_s:g} s: the window "
                "would often hold no probe at all",
                ("availability_window_s",),
            )
        if self.closest_replica_probe and self.client_rack is None:
            raise config_problem(
                "closest_replica_probe needs client_rack: the broker picks the replica in the client's rack",
                ("client_rack",),
            )
        return self


class ExactTimeLagConfig(_Section):
    """Exact time lag: the timestamp of the record at each lagging group's committed offset, read from Kafka."""

    enabled: bool = False
    interval_s: float = Field(default=10.0, gt=0)
    """How often the lagging partitions' record timestamps are looked up."""
    max_fetches_per_cycle: int = Field(default=100, ge=1)
    """Records read per cluster per cycle at most (bounded work); the rest wait for the next cycle."""
    fetch_timeout_s: float = Field(default=5.0, gt=0)
    """How long one cycle waits for its records; a partition not answered in time is retried next cycle."""
    cache_size: int = Field(default=100_000, ge=1)
    """(partition, offset) -> timestamp entries kept; a committed offset is read once while it stays."""


class PageCacheConfig(_Section):
    """The page-cache hint: flag groups whose lag reaches further back than the brokers' page cache holds, so their
    reads go to disk (the Kuaishou seed). Give `window_s`, or `size_bytes` to derive it from the produce rate."""

    enabled: bool = False
    window_s: float | None = Field(default=None, gt=0)
    """Seconds of recent data the brokers' page cache holds, as the operator measured it."""
    size_bytes: int | None = Field(default=None, gt=0)
    """Page cache per broker available for log data; the window is this / the broker's write rate in bytes/s."""
    record_bytes: float = Field(default=1024.0, gt=0)
    """Average record size on disk (batch overhead included), to turn HWM rates (records/s) into bytes/s."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.enabled and (self.window_s is None) == (self.size_bytes is None):
            raise config_problem("give exactly one of window_s or size_bytes when the page-cache hint is enabled")
        return self


class LagNotifyConfig(_Section):
    """Incidents per consumer group, sent through the alert sink (`alerting`) and resolved on recovery."""

    enabled: bool = False
    severity: Literal["WARN", "ERR"] = "ERR"
    """The lowest group status that opens an incident (Burrow's notifier `threshold`: 2 WARN, 3 ERR)."""
    interval_s: float = Field(default=30.0, gt=0)
    """How often every group is evaluated for notification (Burrow's notifier `interval`); resending, keep-alive,
    routing labels and the spool are `alerting`'s."""


class LagEvaluationLogConfig(_Section):
    """The lag evaluation log: every `interval_s`, one Parquet row per consumer group (and, opt-in, per
    group-partition), read by the SLO engine as a `lag` source (schema: docs/sli-log.md, "Lag evaluation log")."""

    enabled: bool = True
    dir: Path | None = None
    """The log's root (`groups/date=YYYY-MM-DD/part-*.parquet` and `partitions/...` below it); None means
    `<state dir>/sli/lag`. Relative paths are relative to the process's working directory."""
    interval_s: float = Field(default=15.0, gt=0, le=60)
    """How often every group is evaluated and written; at most a minute, so every minute holds a row of each group
    (timeslice SLOs count minutes)."""
    partitions: bool = False
    """Also a row per group-partition each cycle (`partitions/`); off by default since it grows with the partition
    count, while group rows grow with the group count."""
    flush_interval_s: float = Field(default=60.0, gt=0, le=60)
    """Rows reach disk at least this often (and on stop); at most a minute, as for the canary's log."""
    max_bytes: int = Field(default=1 << 30, ge=1 << 20)
    """The size bound of the whole log (group and partition rows): the oldest files go first (at least 1 MiB)."""
    queue_size: int = Field(default=1_000_000, ge=1)
    """Rows waiting for the writer at most; a cycle's group rows (or its partition rows) that do not fit are dropped
    together and counted, evaluation never waits. Keep it above the rows of one cycle."""


IngestionMode = Literal["consumer_offsets", "admin"]


class LagConfig(_Section):
    """Consumer-lag evaluator (lag/): Burrow's settings by their Burrow names, plus ours."""

    enabled: bool = True
    mode: Literal["burrow", "burrow-1.2", "enhanced"] = "enhanced"
    """Rule set: Burrow's current rules, Burrow 1.2's, or ours (time lag aware)."""
    intervals: int = Field(default=10, ge=2, le=255)
    """Offsets kept per partition window, as Burrow's `intervals`; the rules compare at least two."""
    offset_refresh_s: float = Field(default=10.0, gt=0)
    """How often HWMs are read (Burrow's `offset-refresh`)."""
    min_distance_s: float = Field(default=0.0, ge=0)
    """A commit closer than this to the previous stored one replaces it (Burrow's `min-distance`)."""
    allowed_lag: int = Field(default=0, ge=0)
    """Lag at or below this counts as caught up (Burrow >= 1.3.7 `allowed-lag`; ignored by burrow-1.2)."""
    minimum_complete: float = Field(default=0.0, ge=0, le=1)
    """Windows filled less than this are OK without rules (Burrow's `minimum-complete`)."""
    expire_group_s: float = Field(default=604_800.0, gt=0)
    """A group with no commit for this long is forgotten (Burrow's `expire-group`, 7 days)."""
    hwm_history: int = Field(default=60, ge=2, le=65535)
    """HWM samples kept per partition for time lag, idle detection and produce rates."""
    stale_after_s: float | None = Field(default=None, gt=0)
    """A cluster whose offsets were not refreshed for this long is unknown (default 3 x the slowest refresh)."""
    recovery_s: float | None = Field(default=None, ge=0)
    """After an outage, groups stay unknown this long while commits catch up (default 3 x offset_refresh_s)."""
    group_allow: Regex = ".*"
    group_deny: Regex | None = None
    ingestion: IngestionMode = "consumer_offsets"
    """Where commits come from: the `__consumer_offsets` topic (commit timestamps from the broker) or the Admin API
    (committed offsets polled per group; the poll time stands in for the commit time)."""
    ingestion_by_cluster: dict[str, IngestionMode] = {}
    """Per-cluster exceptions to `ingestion`, by cluster name (e.g. a cluster whose internal topic is not readable)."""
    group_offsets_refresh_s: float | None = Field(default=None, gt=0)
    """Admin ingestion: how often committed offsets are polled (default offset_refresh_s)."""
    exact_time_lag: ExactTimeLagConfig = ExactTimeLagConfig()
    page_cache: PageCacheConfig = PageCacheConfig()
    notify: LagNotifyConfig = LagNotifyConfig()
    evaluation_log: LagEvaluationLogConfig = LagEvaluationLogConfig()
    listen: HostPort | None = None
    """The Burrow v3 API and /metrics listener of `kafka-pulse lag` (default: `http.listen`)."""
    metrics_granularity: Literal["partition", "group"] = "partition"
    """`group` exports only the per-group families on /metrics (as KMinion's `granularity: topic` trims its own):
    per-partition series are most of a scrape at scale. The Burrow API and the evaluation log keep every detail."""

    @model_validator(mode="after")
    def _stale_after_a_refresh(self) -> Self:
        slowest = max(self.offset_refresh_s, self.group_offsets_refresh_s or 0.0)
        if self.stale_after_s is not None and self.stale_after_s <= slowest:
            raise config_problem(
                f"{self.stale_after_s:g} s must be longer than the slowest refresh ({slowest:g} s), or every cluster "
                "would turn unknown between two refreshes",
                ("stale_after_s",),
            )
        return self

    def effective_stale_after_s(self) -> float:
        return self.stale_after_s or 3 * max(self.offset_refresh_s, self.group_offsets_refresh_s or 0.0)

    def effective_recovery_s(self) -> float:
        return self.recovery_s if self.recovery_s is not None else 3 * self.offset_refresh_s

    def ingestion_for(self, cluster: str) -> IngestionMode:
        return self.ingestion_by_cluster.get(cluster, self.ingestion)


class SloConfig(_Section):
    """Burn-rate job (slo/)."""

    enabled: bool = True
    spec: ExistingFile | None = None
    """SLO spec file; SLOs may also be given inline under the top-level `slos` key."""
    spark_master: str = "local[*]"
    """Any Spark master URL: `local[*]`, `spark://host:7077`, `yarn`, `k8s://...`."""
    schedule_s: float = Field(default=60.0, gt=0)
    results_dir: Path | None = None
    """Each evaluation also writes `evaluation-<time>.parquet` here (relative to the working directory)."""
    pushgateway_url: HttpUrl | None = None
    """Each evaluation also pushes its budget gauges (job `kafka-pulse-slo`) to this Pushgateway, for Grafana."""


# --- alerting (pulse/alerts.py; docs/alerting.md) ---

_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _resolve_dir(path: Path, info: ValidationInfo) -> Path:
    """A relative directory is relative to the config file's directory; it need not exist yet."""
    base_dir = info.context.get("base_dir") if isinstance(info.context, dict) else None
    return base_dir / path if isinstance(base_dir, Path) and not path.is_absolute() else path


class AlertingConfig(_Section):
    """Where alerts go (Alertmanager v2 API) and how they survive its absence; off by default (it needs a URL)."""

    enabled: bool = False
    alertmanager_url: HttpUrl | None = None
    spool_dir: Annotated[Path, AfterValidator(_resolve_dir)] | None = None
    """Where alerts wait while Alertmanager is unreachable; default `<state dir>/alert-spool`."""
    spool_max_bytes: int = Field(default=16 * 1024 * 1024, ge=64 * 1024)
    """Bound of the spool file; past it the oldest waiting alerts are dropped (and counted)."""
    timeout_s: float = Field(default=5.0, gt=0, le=60)
    """Per POST to Alertmanager; a slower answer counts as a failure and the alerts are spooled."""
    retry_after_s: float = Field(default=10.0, gt=0)
    """After a failure, alerts go straight to the spool for this long instead of waiting on the network again."""
    resend_interval_s: float = Field(default=60.0, gt=0)
    """How often open alerts are resent (at least every cycle of the component that raises them)."""
    keepalive_cycles: int = Field(default=4, ge=2)
    """Firing alerts carry `endsAt = now + keepalive_cycles x resend_interval_s`: missed cycles before Alertmanager
    resolves them by itself (Prometheus uses 4)."""
    resolved_retention_s: float = Field(default=300.0, ge=0)
    """How long a resolved alert keeps being resent, for an Alertmanager that missed it."""
    labels: dict[str, str] = {}
    """Added to every alert for routing (e.g. `team: kafka`, `env: prod`); identity, so keep them constant."""
    runbook_url: str | None = None
    """Runbook link template for the `runbook_url` annotation; `{label}` is replaced by that label's value,
    e.g. `https://runbooks.example.com/kafka/{alertname}#{slo}`."""

    @model_validator(mode="after")
    def _url_when_enabled(self) -> Self:
        if self.enabled and self.alertmanager_url is None:
            raise config_problem("required when alerting is enabled", ("alertmanager_url",))
        return self

    @field_validator("labels")
    @classmethod
    def _routing_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for name, value in labels.items():
            if not _LABEL_NAME.fullmatch(name):
                raise config_problem(f"{name!r} is not a label name (letters, digits, '_'; no leading digit)", (name,))
            if name in ("alertname", "severity"):
                raise config_problem(f"{name!r} is set by the component raising the alert, not here", (name,))
            if not value:
                raise config_problem("empty value: Alertmanager drops empty labels; remove the key instead", (name,))
        return labels

    @field_validator("runbook_url")
    @classmethod
    def _runbook_template(cls, template: str | None) -> str | None:
        if template is None:
            return None
        for name in _PLACEHOLDER.findall(template):
            if not _LABEL_NAME.fullmatch(name):
                raise ValueError(f"{template!r}: {{{name}}} is not a label placeholder such as {{slo}}")
        if urlsplit(_PLACEHOLDER.sub("x", template)).scheme not in ("http", "https"):
            raise ValueError(f"{template!r} is not an http(s) URL template, e.g. https://runbooks.example.com/{{slo}}")
        return template


# --- end of alerting ---


class BasicAuthConfig(_Section):
    """HTTP basic auth for the /metrics and lag API listener."""

    username: str = Field(min_length=1)
    password: SecretStr


class HttpTlsConfig(_Section):
    """Serve HTTPS with this certificate and key."""

    cert_file: ExistingFile
    key_file: ExistingFile


class HttpConfig(_Section):
    """The one HTTP listener: /metrics and the Burrow v3 API. Loopback by default."""

    listen: HostPort = "127.0.0.1:9308"
    basic_auth: BasicAuthConfig | None = None
    tls: HttpTlsConfig | None = None


class PulseConfig(_Section):
    """The whole config file; every section has defaults, so `{}` is a valid (if idle) config."""

    clusters: list[ClusterConfig] = []
    collectors: CollectorsConfig = CollectorsConfig()
    canary: CanaryConfig = CanaryConfig()
    lag: LagConfig = LagConfig()
    slo: SloConfig = SloConfig()
    alerting: AlertingConfig = AlertingConfig()
    http: HttpConfig = HttpConfig()
    # Placeholder, loosely typed on purpose: the SLO issue defines the spec model (slo/spec.py) and validates
    # these entries; until then a file holding only `slos:` must load.
    slos: list[dict[str, Any]] = []

    @field_validator("clusters")
    @classmethod
    def _unique_cluster_names(cls, clusters: list[ClusterConfig]) -> list[ClusterConfig]:
        first: dict[str, int] = {}
        for index, cluster in enumerate(clusters):
            if cluster.name in first:
                reason = f"duplicate cluster name {cluster.name!r} (also clusters[{first[cluster.name]}])"
                raise config_problem(reason, (index, "name"))
            first[cluster.name] = index
        return clusters

    # --- lag: checks across sections (issue #5) ---
    @field_validator("lag")
    @classmethod
    def _lag_clusters_exist(cls, lag: LagConfig, info: ValidationInfo) -> LagConfig:
        clusters = info.data.get("clusters")
        if clusters is None:
            return lag  # clusters itself was invalid and is reported there
        names = [c.name for c in clusters]
        for name in lag.ingestion_by_cluster:
            if name not in names:
                known = ", ".join(names) or "none"
                raise config_problem(f"no cluster named {name!r} is configured (clusters: {known})",
                                     ("ingestion_by_cluster", name))  # fmt: skip
        return lag

    @model_validator(mode="after")
    def _lag_notify_has_a_sink(self) -> Self:
        if self.lag.notify.enabled and not self.alerting.enabled:
            raise config_problem("lag.notify is enabled but alerting is not; set alerting.enabled and "
                                 "alerting.alertmanager_url", ("lag", "notify", "enabled"))  # fmt: skip
        return self

    # --- end of lag checks ---

    def cluster(self, name: str | None = None) -> ClusterConfig:
        """The cluster called `name`, or the only one when `name` is None; ConfigError lists the known names."""
        known = ", ".join(c.name for c in self.clusters) or "none"
        if name is None:
            if len(self.clusters) == 1:
                return self.clusters[0]
            if not self.clusters:
                raise ConfigError("no clusters are configured; add one under `clusters:`")
            raise ConfigError(f"{len(self.clusters)} clusters are configured ({known}); name one")
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise ConfigError(f"unknown cluster {name!r}; configured clusters: {known}")


def load_config(path: Path, environ: Mapping[str, str]) -> PulseConfig:
    """Read, substitute and validate the config file at `path`; ConfigError lists every problem, one a line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    return parse_config(text, str(path), environ, base_dir=path.parent)


def parse_config(text: str, source: str, environ: Mapping[str, str], base_dir: Path | None = None) -> PulseConfig:
    """Validate config `text`; `source` names it in messages, `base_dir` anchors relative file paths."""
    tree, env_problems = substitute(read_tree(text, source), environ)
    try:
        config = PulseConfig.model_validate(tree, context={"base_dir": base_dir})
    except ValidationError as exc:
        found = [describe_error(error, PulseConfig) for error in exc.errors(include_url=False)]
    else:
        if not env_problems:
            return config
        found = []
    problems = [(p.loc, p.reason) for p in env_problems]
    # An unresolved ${VAR} is already reported; a type error on its literal text below it would be noise.
    problems += [(loc, why) for loc, why in found if not any(loc[: len(p.loc)] == p.loc for p in env_problems)]
    raise ConfigError("\n".join(f"{source}: {format_key_path(loc)}: {reason}" for loc, reason in problems))
