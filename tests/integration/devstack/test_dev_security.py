"""The sasl_ssl dev cluster: SCRAM-SHA-512 over TLS with a local CA, reached through our connection profile."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from pydantic import SecretStr

from kafka_pulse.clusters import dev_cluster_config
from pulse.errors import AuthenticationFailed
from pulse.profile import check_connection, client_config
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def test_right_scram_credentials_are_accepted(kafka_sasl: KafkaHandle) -> None:
    cluster = dev_cluster_config(kafka_sasl.cluster)
    assert cluster.security.protocol == "SASL_SSL"
    summary = check_connection(cluster, timeout_s=20)
    assert [(b.id, b.rack) for b in summary.brokers] == [(1, "az-a")]
    assert summary.cluster_id == kafka_sasl.cluster.spec.cluster_id


def test_records_flow_over_sasl_ssl(kafka_sasl: KafkaHandle) -> None:
    topic = kafka_sasl.create_topic("secure", partitions=1)  # created over the internal listener
    settings = client_config(dev_cluster_config(kafka_sasl.cluster))
    producer = Producer({**settings, "acks": "all"})
    producer.produce(topic, b"over-tls")
    assert producer.flush(20) == 0
    consumer = Consumer({**settings, "group.id": "secure-reader", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        msg = None
        for _ in range(40):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.value() == b"over-tls"
    finally:
        consumer.close()


def test_wrong_password_is_refused_with_a_clear_error(kafka_sasl: KafkaHandle) -> None:
    right = dev_cluster_config(kafka_sasl.cluster)
    assert right.security.sasl is not None
    wrong = right.model_copy(
        update={
            "security": right.security.model_copy(
                update={"sasl": right.security.sasl.model_copy(update={"password": SecretStr("not-the-password")})}
            )
        }
    )
    with pytest.raises(AuthenticationFailed) as caught:
        check_connection(wrong, timeout_s=20)
    message = str(caught.value)
    assert "SASL authentication failed for user 'pulse' (SCRAM-SHA-512)" in message
    assert "invalid credentials" in message
    assert "not-the-password" not in message
    assert right.security.sasl.password.get_secret_value() not in message


def test_password_is_not_on_any_command_line(kafka_sasl: KafkaHandle) -> None:
    creds = kafka_sasl.cluster.credentials()
    assert creds is not None
    for pid in kafka_sasl.cluster.pids.values():
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            assert creds.password.encode() not in cmdline.read()
