"""`kafka-pulse check` over SASL_SSL (SCRAM-SHA-512, the dev cluster's own CA): every probe speaks the connection
profile (librdkafka's for metadata, round trip and lag, kafka-python's for the KRaft quorum, TLS for ApiVersions);
a refused login is UNKNOWN, never CRIT: it says nothing about the cluster's health."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.health_check import run_check
from kafka_pulse.check.judge.verdict import Status, overall
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import PulseConfig
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def test_check_speaks_sasl_ssl(kafka_sasl: KafkaHandle) -> None:
    sections = run_check(PulseConfig(), dev_cluster_config(kafka_sasl.cluster), Deadline.after(60))
    statuses = {s.name: s.status for s in sections}
    assert statuses == {
        "brokers": Status.OK, "controller": Status.OK, "partitions": Status.OK, "round_trip": Status.OK,
        "lag": Status.INFO, "slo": Status.INFO, "self": Status.INFO,
    }, [s.reasons for s in sections]  # fmt: skip


def test_a_refused_login_is_unknown_not_crit(kafka_sasl: KafkaHandle) -> None:
    right = dev_cluster_config(kafka_sasl.cluster)
    assert right.security.sasl is not None
    sasl = right.security.sasl.model_copy(update={"password": SecretStr("not-the-password")})
    wrong = right.model_copy(update={"security": right.security.model_copy(update={"sasl": sasl})})
    sections = run_check(PulseConfig(), wrong, Deadline.after(15))
    brokers = next(s for s in sections if s.name == "brokers")
    assert brokers.status is Status.UNKNOWN, brokers
    assert overall(sections) is Status.UNKNOWN
    assert "not-the-password" not in repr(sections)
