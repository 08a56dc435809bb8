"""Config section `clusters:`: the Kafka clusters, how clients reach them (security) and their brokers' JMX."""

from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, SecretStr, ValidationInfo, field_validator, model_validator

from pulse.config.types import (
    ExistingFile,
    HostPort,
    Name,
    PositiveSeconds,
    Section,
    check_credentials,
    unique_by,
    upper,
)
from pulse.envsubst import config_problem


class SaslConfig(Section):
    """SASL credentials; only sent when the protocol is SASL_PLAINTEXT or SASL_SSL."""

    mechanism: Annotated[Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], BeforeValidator(upper)]
    """SASL mechanism, as the brokers' listener expects it (case-insensitive)."""
    username: str = Field(min_length=1)
    """The SASL user; it also names the principal the Kafka ACLs are granted to (docs/security.md)."""
    password: SecretStr
    """The SASL password; give it as `${VAR}`."""


class TlsConfig(Section):
    """TLS to the brokers: CA to trust, an optional client certificate, and hostname verification."""

    ca_file: ExistingFile | None = None
    """PEM CA bundle; the system trust store is used when absent."""
    cert_file: ExistingFile | None = None
    """PEM client certificate for mutual TLS; needs `key_file`."""
    key_file: ExistingFile | None = None
    """PEM private key of `cert_file`; needs `cert_file`."""
    key_password: SecretStr | None = None
    """Passphrase of an encrypted `key_file`."""
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


class SecurityConfig(Section):
    """How clients authenticate and encrypt; contradictory combinations are refused rather than guessed."""

    protocol: Annotated[Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], BeforeValidator(upper)] = "PLAINTEXT"
    """Kafka's `security.protocol` (case-insensitive); SASL_* needs `sasl`, SSL and SASL_SSL take `tls`."""
    sasl: SaslConfig | None = Field(default=None, validate_default=True)
    """SASL login; required with SASL_PLAINTEXT and SASL_SSL, refused with the others."""
    tls: TlsConfig | None = Field(default=None, validate_default=True)
    """TLS settings for SSL and SASL_SSL; absent means the system trust store with hostname verification."""

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


class JmxEndpoint(Section):
    """A JVM's remote JMX (over RMI): where it listens and the login it asks for; brokers and clients alike."""

    host: str = "127.0.0.1"
    """Host of the JVM's JMX (RMI) port."""
    port: int = Field(ge=1, le=65535)
    """The JVM's `com.sun.management.jmxremote.port` (1-65535)."""
    username: str | None = None
    """JMX login (`jmxremote.password` file), with `password`; jmxquery refuses a login."""
    password: SecretStr | None = None
    """JMX password, with `username`; give it as `${VAR}`."""
    ssl: bool = False
    """JMX over TLS (`com.sun.management.jmxremote.ssl=true` in that JVM); the trust store is configured beside it."""

    @model_validator(mode="after")
    def _credentials_in_pairs(self) -> Self:
        check_credentials(self.username, self.password)
        return self


class JmxBrokerConfig(JmxEndpoint):
    """One broker's JMX endpoint, scraped by the collectors; trust for `ssl: true` comes from `jmx.truststore`."""

    broker_id: int = Field(ge=0)
    """The broker's `node.id`: the `broker` label of its samples; unique within a cluster."""


class JmxConfig(Section):
    """JMX endpoints of the brokers; absent means the collectors only use the Admin API."""

    brokers: Annotated[
        list[JmxBrokerConfig], unique_by(lambda b: b.broker_id, "broker_id", "broker_id", "in brokers")
    ] = Field(default_factory=list)
    """One JMX endpoint per broker, each scraped on its own thread."""
    timeout_s: PositiveSeconds = 5.0
    """Per-broker limit for one scrape; a slower broker is reported as unknown for that scrape."""
    truststore: ExistingFile | None = None
    """JKS or PKCS12 trust store for this cluster's brokers with `ssl: true` (each cluster verified by its own)."""
    truststore_password: SecretStr | None = None
    """Password of `truststore`."""


def _split_servers(value: Any) -> Any:
    """Accept the librdkafka spelling `a:9092,b:9092` as well as a YAML list."""
    if isinstance(value, str):
        return [part for part in (p.strip() for p in value.split(",")) if part]
    return value


class ClusterConfig(Section):
    """A Kafka cluster to monitor and how to reach it."""

    name: Name
    """Unique; used in metric labels and in the Burrow-compatible API paths."""
    bootstrap_servers: Annotated[list[HostPort], BeforeValidator(_split_servers)]
    """Brokers to bootstrap from, as a list or librdkafka's `a:9092,b:9092`; at least one."""
    security: SecurityConfig = SecurityConfig()
    """Protocol, SASL and TLS for every Kafka client kafka-pulse opens on this cluster."""
    jmx: JmxConfig | None = None
    """The brokers' JMX endpoints; absent means the collectors only read the Admin API."""

    @field_validator("bootstrap_servers")
    @classmethod
    def _at_least_one_server(cls, servers: list[str]) -> list[str]:
        if not servers:
            raise ValueError("at least one host:port is required")
        return servers
