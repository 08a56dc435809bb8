"""`slo stream`'s pure parts: the Kafka source's options from a connection profile, and the ring's size."""

from pathlib import Path
from typing import Any

import pytest

from pulse.errors import ConfigError
from slo.buckets import ring_minutes
from slo.model import Slo
from slo.spec import parse_slos
from slo.stream import KAFKA_PACKAGE, dropped_as_late, package_settings, spark_kafka_options, stream_settings


def test_a_plaintext_profile_is_servers_and_protocol() -> None:
    assert spark_kafka_options({"bootstrap.servers": "a:9092,b:9092", "security.protocol": "PLAINTEXT"}) == {
        "kafka.bootstrap.servers": "a:9092,b:9092",
        "kafka.security.protocol": "PLAINTEXT",
    }


def test_a_sasl_ssl_profile_becomes_a_jaas_login_and_a_pem_truststore() -> None:
    options = spark_kafka_options(
        {
            "bootstrap.servers": "a:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "pulse",
            "sasl.password": 'p"w\\d',
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
        }
    )
    assert options["kafka.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="pulse" password="p\\"w\\\\d";'
    )
    assert options["kafka.ssl.truststore.type"] == "PEM"
    assert options["kafka.ssl.truststore.location"] == "/etc/ca.pem"
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""


@pytest.mark.parametrize(
    "extra",
    [{"sasl.mechanism": "OAUTHBEARER", "sasl.username": "u", "sasl.password": "p"}, {"ssl.certificate.location": "/c"}],
)
def test_what_the_stream_cannot_map_is_refused(extra: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="not supported by the stream"):
        spark_kafka_options({"bootstrap.servers": "a:9093", "security.protocol": "SASL_SSL", **extra})


def test_the_kafka_source_is_fetched_once_into_the_cache(tmp_path: Path) -> None:
    settings = package_settings(tmp_path)
    assert settings["spark.jars.packages"] == KAFKA_PACKAGE
    assert settings["spark.jars.ivy"] == str(tmp_path / "spark-ivy")


def test_the_ring_holds_the_longest_window_or_calendar_period() -> None:
    def slo(window: object) -> Slo:
        entry = {"name": "x", "source": {"type": "events", "path": "/x"}, "good": "ok", "total": "n"}
        (found,) = parse_slos([("t", [entry | {"objective": 99.0, "window": window}])], Path("/"), check_sources=False)
        return found

    assert ring_minutes([slo("30d")]) == 30 * 1440
    assert ring_minutes([slo({"calendar": "1M", "timezone": "UTC"})]) == 32 * 1440


def test_late_rows_are_summed_over_every_operator_of_each_new_batch_once() -> None:
    progress: list[dict[str, Any]] = [
        {"batchId": 3, "stateOperators": [{"numRowsDroppedByWatermark": 5}]},
        {"batchId": 4, "stateOperators": [{"numRowsDroppedByWatermark": 2}, {"numRowsDroppedByWatermark": 1}]},
        {"batchId": 5, "stateOperators": []},
        {"batchId": 6},
    ]
    assert dropped_as_late(progress, 3) == (3, 6)  # batch 3 was counted by the call before
    assert dropped_as_late(progress, 6) == (0, 6)
    assert dropped_as_late([], 6) == (0, 6)


def test_the_query_starts_with_a_partition_per_core_and_no_batch_without_data() -> None:
    assert stream_settings(2)["spark.sql.shuffle.partitions"] == "2"
    assert stream_settings(0)["spark.sql.shuffle.partitions"] == "1"
    assert stream_settings(2)["spark.sql.streaming.noDataMicroBatches.enabled"] == "false"
