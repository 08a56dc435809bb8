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


class CollectorsConfig(_Section):
    """JMX and Admin API collectors (collectors/)."""

    enabled: bool = True
    scrape_interval_s: float = Field(default=15.0, gt=0)
    transport: Literal["jmxquery", "jpype"] = "jmxquery"
    """`jmxquery` forks a JVM per call; `jpype` keeps one JMX connection per broker in-process."""
    topic_metrics: Literal["off", "topic", "partition"] = "off"
    """Per-topic JMX beans (`topic`: BrokerTopicMetrics per topic; `partition`: also Log and Partition beans per
    partition), filtered by `topic_allow`/`topic_deny`; off by default because they grow with the topic count."""
    topic_allow: Regex = ".*"
    topic_deny: Regex | None = None


class CanaryConfig(_Section):
    """Synthetic producer/consumer (canary/)."""

    enabled: bool = True
    topic: str = "__pulse_canary"
    interval_s: float = Field(default=1.0, gt=0)
    client_rack: str | None = None
    """The canary's own rack (`client.rack`), so probes can be labelled same-rack or cross-rack."""

    @field_validator("topic")
    @classmethod
    def _valid_topic(cls, topic: str) -> str:
        if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
            raise ValueError(f"{topic!r} is not a Kafka topic name (1-249 of letters, digits, '.', '_', '-')")
        return topic


class LagConfig(_Section):
    """Consumer-lag evaluator (lag/)."""

    enabled: bool = True
    mode: Literal["burrow", "burrow-1.2", "enhanced"] = "enhanced"
    """Rule set: Burrow's current rules, Burrow 1.2's, or ours (time lag aware)."""
    intervals: int = Field(default=10, ge=2)
    """Offsets kept per partition window, as Burrow's `intervals`; the rules compare at least two."""
    offset_refresh_s: float = Field(default=10.0, gt=0)
    group_allow: Regex = ".*"
    group_deny: Regex | None = None


class SloConfig(_Section):
    """Burn-rate job (slo/)."""

    enabled: bool = True
    spec: ExistingFile | None = None
    """SLO spec file; SLOs may also be given inline under the top-level `slos` key."""
    spark_master: str = "local[*]"
    schedule_s: float = Field(default=60.0, gt=0)


class AlertingConfig(_Section):
    """Where alerts go (Alertmanager v2 API); off by default because it needs a URL."""

    enabled: bool = False
    alertmanager_url: HttpUrl | None = None

    @model_validator(mode="after")
    def _url_when_enabled(self) -> Self:
        if self.enabled and self.alertmanager_url is None:
            raise config_problem("required when alerting is enabled", ("alertmanager_url",))
        return self


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
