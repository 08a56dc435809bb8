"""Kafka connection profiles: config -> librdkafka settings (pure), and a check against a closed port.

Checks against real SASL_SSL clusters live in the integration tests.
"""

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from pulse.config import ClusterConfig
from pulse.errors import AuthenticationFailed, KafkaUnavailable
from pulse.ports import free_ports
from pulse.profile import admin_config, check_connection, client_config


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    for name in ("ca.pem", "client.crt", "client.key"):
        (tmp_path / name).write_text("-----BEGIN PLACEHOLDER-----\n")
    return tmp_path


def cluster(**security: Any) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {"name": "prod", "bootstrap_servers": ["kafka1:9093", "kafka2:9093"], "security": security}
    )


def test_plaintext_needs_only_servers_and_protocol() -> None:
    assert client_config(cluster()) == {
        "bootstrap.servers": "kafka1:9093,kafka2:9093",
        "security.protocol": "PLAINTEXT",
    }


def test_sasl_ssl_with_client_certificate(pem: Path) -> None:
    config = client_config(
        cluster(
            protocol="SASL_SSL",
            sasl={"mechanism": "SCRAM-SHA-512", "username": "pulse", "password": "s3cret"},
            tls={
                "ca_file": str(pem / "ca.pem"),
                "cert_file": str(pem / "client.crt"),
                "key_file": str(pem / "client.key"),
                "key_password": "keypass",
            },
        )
    )
    assert config == {
        "bootstrap.servers": "kafka1:9093,kafka2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "pulse",
        "sasl.password": "s3cret",
        "ssl.ca.location": str(pem / "ca.pem"),
        "ssl.certificate.location": str(pem / "client.crt"),
        "ssl.key.location": str(pem / "client.key"),
        "ssl.key.password": "keypass",
        "ssl.endpoint.identification.algorithm": "https",
    }


def test_sasl_plaintext_sends_no_tls_settings() -> None:
    config = client_config(
        cluster(protocol="SASL_PLAINTEXT", sasl={"mechanism": "PLAIN", "username": "u", "password": "p"})
    )
    assert config["security.protocol"] == "SASL_PLAINTEXT"
    assert config["sasl.mechanism"] == "PLAIN"
    assert not any(key.startswith("ssl.") for key in config)


def test_ssl_without_tls_section_still_verifies_hostnames() -> None:
    # The system CA store is used; verification is spelled out rather than left to the librdkafka default.
    config = client_config(cluster(protocol="SSL"))
    assert config["ssl.endpoint.identification.algorithm"] == "https"
    assert "ssl.ca.location" not in config


def test_hostname_verification_can_be_turned_off(pem: Path) -> None:
    config = client_config(cluster(protocol="SSL", tls={"ca_file": str(pem / "ca.pem"), "verify_hostname": False}))
    assert config["ssl.endpoint.identification.algorithm"] == "none"


def test_protocol_and_mechanism_are_case_insensitive() -> None:
    config = client_config(
        cluster(protocol="sasl_plaintext", sasl={"mechanism": "scram-sha-256", "username": "u", "password": "p"})
    )
    assert (config["security.protocol"], config["sasl.mechanism"]) == ("SASL_PLAINTEXT", "SCRAM-SHA-256")


def test_admin_clients_keep_a_connection_to_every_broker() -> None:
    """Admin clients turn off on-demand connections: librdkafka skipped the reconnect backoff for them, and a request
    bound for a kill -9'd broker reconnected in a loop (docs/kafka-clients.md). The librdkafka bundled with
    confluent-kafka must still know the (hidden) setting: an unknown one makes the constructor raise."""
    (port,) = free_ports(1)
    closed = ClusterConfig(name="gone", bootstrap_servers=[f"127.0.0.1:{port}"])
    assert admin_config(closed) == {**client_config(closed), "enable.sparse.connections": "false"}
    assert "enable.sparse.connections" not in client_config(closed)  # producers and consumers keep the default
    AdminClient({**admin_config(closed), "log_level": 0})


def test_check_connection_to_a_closed_port_names_the_cluster() -> None:
    (port,) = free_ports(1)
    target = ClusterConfig.model_validate(
        {
            "name": "closed",
            "bootstrap_servers": [f"127.0.0.1:{port}"],
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "sasl": {"mechanism": "SCRAM-SHA-512", "username": "pulse", "password": "never-printed"},
            },
        }
    )
    started = time.monotonic()
    with pytest.raises(KafkaUnavailable) as excinfo:
        check_connection(target, timeout_s=3)
    elapsed_s = time.monotonic() - started
    message = str(excinfo.value)
    assert not isinstance(excinfo.value, AuthenticationFailed)
    assert message.startswith(f"cluster 'closed' (127.0.0.1:{port}) is unreachable: ")
    assert "Connection refused" in message
    assert "never-printed" not in message
    assert elapsed_s < 3 + 2  # the timeout, plus slack for a loaded machine
