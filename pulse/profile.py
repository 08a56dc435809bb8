"""Kafka connection profiles: a `ClusterConfig` becomes librdkafka (or kafka-python) settings, and a connection check.

Every component builds its producers, consumers and admin clients from `client_config`, so PLAINTEXT, SSL and
SASL behave the same everywhere; `check_connection` is what `kafka-pulse check` and component start-up call.
"""

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from pulse.admin_requests import describe_cluster
from pulse.config import ClusterConfig
from pulse.errors import AuthenticationFailed, KafkaUnavailable
from pulse.kafka_log import verdict_settings

_ATTEMPT_TIMING = re.compile(r" \(after \d+ms in state \w+\)")
"""librdkafka's per-attempt suffix; removed so repeated attempts of one failure read as one reason."""
_ATTEMPT_S = 0.5
"""Length of one metadata attempt in `check_connection`; bounds how late an authentication failure is seen."""


@dataclass(frozen=True)
class BrokerInfo:
    """One broker as the cluster describes itself."""

    id: int
    host: str
    port: int
    rack: str | None
    """`broker.rack`, or None when the broker has none; the canary and AZ-aware metrics label by it."""


@dataclass(frozen=True)
class ClusterSummary:
    """What a successful connection check learnt about the cluster."""

    cluster_id: str | None
    controller_id: int | None
    """The active controller as the Admin API reports it (under KRaft, a broker the client may send to)."""
    brokers: tuple[BrokerInfo, ...]
    """Sorted by broker id."""


NO_AUTO_CREATE = {"allow.auto.create.topics": False}
"""Metadata requests and produces must not create a topic (the canary's monitor topic) with broker defaults behind
our back."""


def client_config(cluster: ClusterConfig) -> dict[str, str]:
    """librdkafka settings for `cluster`: servers, protocol, SASL credentials and TLS files.

    The result holds the SASL and key passwords in clear, because librdkafka needs them so: pass it to a
    client and never log it. Callers add their own settings (client.id, group.id, ...) on top.
    """
    security = cluster.security
    config = {
        "bootstrap.servers": ",".join(cluster.bootstrap_servers),
        "security.protocol": security.protocol,
    }
    if security.sasl is not None:
        config["sasl.mechanism"] = security.sasl.mechanism
        config["sasl.username"] = security.sasl.username
        config["sasl.password"] = security.sasl.password.get_secret_value()
    if security.protocol in ("SSL", "SASL_SSL"):
        tls = security.tls
        # Spelled out even with no `tls` section, so hostname verification never depends on the librdkafka
        # version's default (it changed to "https" in 2.0).
        verify = tls is None or tls.verify_hostname
        config["ssl.endpoint.identification.algorithm"] = "https" if verify else "none"
        if tls is not None:
            if tls.ca_file is not None:
                config["ssl.ca.location"] = str(tls.ca_file)
            if tls.cert_file is not None and tls.key_file is not None:
                config["ssl.certificate.location"] = str(tls.cert_file)
                config["ssl.key.location"] = str(tls.key_file)
            if tls.key_password is not None:
                config["ssl.key.password"] = tls.key_password.get_secret_value()
    return config


ADMIN_SETTINGS: dict[str, str] = {"enable.sparse.connections": "false"}
"""What every librdkafka AdminClient of the product adds to `client_config`: connections to all brokers, kept up
by librdkafka itself, instead of connections opened on demand.

With on-demand ("sparse") connections, an Admin request bound for a broker that is down makes librdkafka's broker
lookup schedule a connection each time the broker's state changes, and a scheduled connection skips the reconnect
backoff (librdkafka 2.x, `rd_kafka_broker_find_by_nodeid0` -> `RD_KAFKA_OP_CONNECT` sets `rkb_ts_reconnect = 0`).
Against a kill -9'd broker each refused connect is such a change, so the broker thread and rdk:main reconnect in a
loop until the request times out: ~13,000 refused connects a second, a core per client, seen from collect's
cluster-state reads (requests go to the "controller", under KRaft a random live broker from the last metadata,
which names a dead broker until the quorum fences it) and its slow-broker probes (one DescribeConfigs per broker
per round, so the loop never ends while the broker is down). `reconnect.backoff.ms` has no effect on it. Kept
connections reconnect on librdkafka's backoff (`reconnect.backoff.ms` doubling up to `reconnect.backoff.max.ms`),
and an Admin client talks to every broker over time anyway (controller picks, per-broker probes and configs).
`enable.sparse.connections` is a hidden librdkafka setting (present since 1.x); docs/kafka-clients.md has more."""


def admin_config(cluster: ClusterConfig) -> dict[str, str]:
    """`client_config` plus `ADMIN_SETTINGS`: the base of every AdminClient built from a cluster's profile."""
    return {**client_config(cluster), **ADMIN_SETTINGS}


def kafka_python_config(
    cluster: ClusterConfig, client_id: str, timeout_s: float, servers: Sequence[str] = ()
) -> dict[str, Any]:
    """The same profile in kafka-python's spelling, for what confluent-kafka's admin client lacks (reassignments,
    DescribeQuorum); `servers` replaces the configured list. Holds passwords in clear, like `client_config`."""
    security = cluster.security
    config: dict[str, Any] = {
        "bootstrap_servers": list(servers or cluster.bootstrap_servers),
        "client_id": client_id,
        "security_protocol": security.protocol,
        "request_timeout_ms": max(100, int(timeout_s * 1000)),
    }
    if security.sasl is not None:
        config |= {
            "sasl_mechanism": security.sasl.mechanism,
            "sasl_plain_username": security.sasl.username,
            "sasl_plain_password": security.sasl.password.get_secret_value(),
        }
    tls = security.tls
    if security.protocol in ("SSL", "SASL_SSL") and tls is not None:
        config["ssl_check_hostname"] = tls.verify_hostname
        if tls.ca_file is not None:
            config["ssl_cafile"] = str(tls.ca_file)
        if tls.cert_file is not None and tls.key_file is not None:
            config |= {"ssl_certfile": str(tls.cert_file), "ssl_keyfile": str(tls.key_file)}
        if tls.key_password is not None:
            config["ssl_password"] = tls.key_password.get_secret_value()
    return config


def check_connection(cluster: ClusterConfig, timeout_s: float = 10) -> ClusterSummary:
    """Connect to `cluster` and describe it, within about `timeout_s` seconds.

    Raises AuthenticationFailed when the brokers refuse our SASL credentials (the message names the user and
    mechanism, never the password), KafkaUnavailable for anything else that stops us reaching the cluster.
    """
    errors: list[KafkaError] = []
    # Any: confluent-kafka types its config as scalars only, but error_cb and logger take objects.
    settings: dict[str, Any] = {
        **admin_config(cluster),
        "client.id": "kafka-pulse-check",
        # librdkafka reports failures through error_cb, served by poll(). Its log lines repeat them every
        # reconnect (about 20 a second against a closed port), so they go to logging at DEBUG, not stderr.
        **verdict_settings(cluster.name, on_error=errors.append),
    }
    admin = AdminClient(settings)
    deadline = time.monotonic() + timeout_s
    try:
        _await_metadata(admin, deadline, errors)
        description = describe_cluster(admin, max(deadline - time.monotonic(), 0.1))
    except (KafkaException, TimeoutError) as exc:
        admin.poll(0)  # deliver the error_cb calls queued while we waited
        failure = exc.args[0] if exc.args else KafkaError(KafkaError._TIMED_OUT, "DescribeCluster timed out")
        raise _translate(cluster, failure, errors) from exc
    brokers = tuple(sorted((BrokerInfo(n.id, n.host, n.port, n.rack) for n in description.nodes), key=lambda b: b.id))
    controller = description.controller
    return ClusterSummary(description.cluster_id, controller.id if controller is not None else None, brokers)


def _await_metadata(admin: AdminClient, deadline: float, errors: list[KafkaError]) -> None:
    """Fetch metadata in short attempts until `deadline`, so refused credentials end the wait early.

    librdkafka keeps retrying a failed SASL or TLS handshake, so one long `list_topics` would sit out the whole
    timeout although the answer is known after the first attempt; errors only surface when we poll.
    """
    while True:
        try:
            admin.list_topics(timeout=max(min(deadline - time.monotonic(), _ATTEMPT_S), 0.01))
            return
        except KafkaException as exc:
            admin.poll(0)
            # A refused login or an untrusted certificate will not fix itself by retrying until the deadline.
            refused = any(_code(e) in (KafkaError._AUTHENTICATION, KafkaError._SSL) for e in (*errors, exc.args[0]))
            if refused or time.monotonic() >= deadline:
                raise


def _code(error: object) -> int | None:
    return error.code() if isinstance(error, KafkaError) else None


def _translate(cluster: ClusterConfig, failure: object, reported: list[KafkaError]) -> KafkaUnavailable:
    """Pick the most telling error: an authentication failure outranks the transport errors it causes."""
    seen = [e for e in reported if isinstance(e, KafkaError)]
    if isinstance(failure, KafkaError):
        seen.append(failure)
    for error in seen:
        if _code(error) == KafkaError._AUTHENTICATION:
            reason, sasl = _ATTEMPT_TIMING.sub("", error.str()), cluster.security.sasl
            if sasl is None:
                return AuthenticationFailed(f"cluster {cluster.name!r}: authentication failed: {reason}")
            return AuthenticationFailed(
                f"cluster {cluster.name!r}: SASL authentication failed for user {sasl.username!r} "
                f"({sasl.mechanism}): {reason}"
            )
    # Distinct reasons in the order they were first reported, e.g. "Connection refused" then "1/1 brokers down".
    reasons = list(dict.fromkeys(_ATTEMPT_TIMING.sub("", e.str()) for e in seen)) or ["no reason given"]
    servers = ",".join(cluster.bootstrap_servers)
    return KafkaUnavailable(f"cluster {cluster.name!r} ({servers}) is unreachable: {'; '.join(reasons[:3])}")
