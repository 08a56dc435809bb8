"""Client naming rules (mapping.py rules 7-8): each row is one client MBean attribute and the series jmx_exporter
with Strimzi's Connect/MirrorMaker 2 rules would give (`kafka_$2_$4{clientid}`, lower-cased label names)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from collectors.catalogue import CLIENT_BEANS, NO_TOPICS, Reading, TopicSelection
from collectors.mapping import BrokerIdentity, ClientIdentity, map_readings, point_for

PRODUCER = "kafka.producer:type=producer-metrics,client-id=orders-1"
FETCH = "kafka.consumer:type=consumer-fetch-manager-metrics,client-id=billing-1"
COORDINATOR = "kafka.consumer:type=consumer-coordinator-metrics,client-id=billing-1"
MIRROR = "kafka.connect.mirror:type=MirrorSourceConnector,source=eu,target=dr,topic=eu.orders,partition=4"
"""As Kafka 4.3's MM2 registers it (seen on a real one); older releases have no `source` key."""
MM2_LABELS = (("source", "eu"), ("target", "dr"), ("topic", "eu.orders"), ("partition", "4"))
MIRROR_OLD = "kafka.connect.mirror:type=MirrorSourceConnector,target=dr,topic=eu.orders,partition=4"
REPO = Path(__file__).resolve().parents[3]


def row(
    bean: str, attribute: str, value: float, name: str, kind: str = "gauge", labels: tuple[tuple[str, str], ...] = ()
) -> object:
    return pytest.param(Reading(bean, attribute, value), name, kind, labels, id=f"{bean.split(':')[0]}-{attribute}")


P = (("clientid", "orders-1"),)
C = (("clientid", "billing-1"),)

ROWS = [
    # Producer (kafka.producer:type=producer-metrics): the chapter's send-side health.
    row(PRODUCER, "record-error-rate", 0.0, "kafka_producer_record_error_rate", labels=P),
    row(PRODUCER, "record-error-total", 3.0, "kafka_producer_record_error", "counter", P),
    row(PRODUCER, "record-retry-rate", 0.5, "kafka_producer_record_retry_rate", labels=P),
    row(PRODUCER, "record-retry-total", 12.0, "kafka_producer_record_retry", "counter", P),
    row(PRODUCER, "request-latency-avg", 4.25, "kafka_producer_request_latency_avg", labels=P),
    row(PRODUCER, "produce-throttle-time-avg", 0.0, "kafka_producer_produce_throttle_time_avg", labels=P),
    # Consumer fetch manager and coordinator.
    row(FETCH, "fetch-latency-avg", 9.5, "kafka_consumer_fetch_manager_fetch_latency_avg", labels=C),
    row(FETCH, "records-lag-max", 120.0, "kafka_consumer_fetch_manager_records_lag_max", labels=C),
    row(FETCH, "fetch-throttle-time-avg", 0.0, "kafka_consumer_fetch_manager_fetch_throttle_time_avg", labels=C),
    row(COORDINATOR, "commit-latency-avg", 6.2, "kafka_consumer_coordinator_commit_latency_avg", labels=C),
    row(COORDINATOR, "assigned-partitions", 3.0, "kafka_consumer_coordinator_assigned_partitions", labels=C),
    # MirrorMaker 2's source connector: every attribute a gauge, as Strimzi types them.
    row(
        MIRROR,
        "replication-latency-ms",
        40.0,
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms",
        labels=MM2_LABELS,
    ),
    row(
        MIRROR,
        "replication-latency-ms-max",
        95.0,
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max",
        labels=MM2_LABELS,
    ),
    row(
        MIRROR,
        "replication-latency-ms-min",
        12.0,
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_min",
        labels=MM2_LABELS,
    ),
    row(
        MIRROR,
        "replication-latency-ms-avg",
        33.3,
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_avg",
        labels=MM2_LABELS,
    ),
    row(MIRROR, "record-age-ms", 51.0, "kafka_connect_mirror_mirrorsourceconnector_record_age_ms", labels=MM2_LABELS),
    row(
        MIRROR,
        "record-age-ms-max",
        800.0,
        "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_max",
        labels=MM2_LABELS,
    ),
    row(
        MIRROR,
        "record-age-ms-min",
        2.0,
        "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_min",
        labels=MM2_LABELS,
    ),
    row(
        MIRROR,
        "record-age-ms-avg",
        60.5,
        "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_avg",
        labels=MM2_LABELS,
    ),
    row(
        MIRROR_OLD,
        "replication-latency-ms-max",
        95.0,
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max",
        labels=MM2_LABELS[1:],
    ),
    # The same rules on beans outside the catalogue, as Strimzi's patterns would name them.
    row(
        "kafka.connect.mirror:type=MirrorCheckpointConnector,source=eu,target=dr,group=billing,topic=t,partition=0",
        "checkpoint-latency-ms",
        7.0,
        "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms",
        labels=(("source", "eu"), ("target", "dr"), ("group", "billing"), ("topic", "t"), ("partition", "0")),
    ),
    row(
        "kafka.consumer:type=consumer-fetch-manager-metrics,client-id=billing-1,topic=orders,partition=2",
        "records-lag",
        7.0,
        "kafka_consumer_fetch_manager_records_lag",
        labels=(*C, ("topic", "orders"), ("partition", "2")),
    ),
    row(
        "kafka.producer:type=producer-node-metrics,client-id=orders-1,node-id=node-2",
        "request-latency-avg",
        2.0,
        "kafka_producer_node_request_latency_avg",
        labels=(*P, ("nodeid", "node-2")),
    ),
    row(
        "kafka.admin.client:type=admin-client-metrics,client-id=adm",
        "request-total",
        5.0,
        "kafka_admin_client_request",
        "counter",
        (("clientid", "adm"),),
    ),
]


@pytest.mark.parametrize(("reading", "name", "kind", "labels"), ROWS)
def test_client_reading_is_named_as_strimzi_rules_name_it(
    reading: Reading, name: str, kind: str, labels: tuple[tuple[str, str], ...]
) -> None:
    point = point_for(reading)
    assert point is not None
    assert (point.name, point.kind, point.labels, point.value) == (name, kind, labels, reading.value)
    assert point.suffix == ("_total" if kind == "counter" else "")
    assert point.help.startswith(f"JMX {reading.bean.split(':')[0]}:type=")


def test_no_sample_in_the_window_stays_nan_and_strings_are_dropped() -> None:
    # Kafka's Avg and Max stats read NaN until a sample lands in the window: exported as NaN, as jmx_exporter does.
    nan = point_for(Reading(PRODUCER, "request-latency-avg", math.nan))
    assert nan is not None and math.isnan(nan.value)
    assert point_for(Reading(PRODUCER, "client-software-name", "apache-kafka-java")) is None
    assert point_for(Reading(MIRROR, "replication-latency-ms", "n/a")) is None


def test_broker_kafka_metrics_beans_keep_their_rule() -> None:
    """Rule 5 (raft-metrics) is not taken over by the client rule: brokers keep Strimzi's Kafka names."""
    point = point_for(Reading("kafka.server:type=raft-metrics", "commit-latency-avg", 1.0))
    assert point is not None and point.name == "kafka_server_raftmetrics_commit_latency_avg"


@pytest.mark.parametrize(
    ("identity", "origin"),
    [
        pytest.param(
            ClientIdentity("orders-app", "prod"),
            (("client_target", "orders-app"), ("cluster", "prod")),
            id="with-cluster",
        ),
        pytest.param(ClientIdentity("orders-app"), (("client_target", "orders-app"),), id="no-cluster-no-label"),
    ],
)
def test_client_samples_carry_the_target_and_the_configured_cluster(
    identity: ClientIdentity, origin: tuple[tuple[str, str], ...]
) -> None:
    families = map_readings([Reading(PRODUCER, "record-error-rate", 0.0)], identity)
    (sample,) = families["kafka_producer_record_error_rate"].samples
    assert sample.labels == (("clientid", "orders-1"), *origin)
    assert identity.describe() == "client target orders-app"
    assert BrokerIdentity("prod", 1, None).describe() == "cluster prod broker 1"


def test_mirror_series_obey_the_topic_regexes() -> None:
    readings = [
        Reading(MIRROR, "record-age-ms", 1.0),
        Reading(MIRROR.replace("eu.orders", "heartbeats"), "record-age-ms", 2.0),
    ]
    kept = map_readings(readings, ClientIdentity("mm2"), TopicSelection(deny="^heartbeats$"))
    assert [
        dict(s.labels)["topic"] for s in kept["kafka_connect_mirror_mirrorsourceconnector_record_age_ms"].samples
    ] == ["eu.orders"]


def _client_families_in_docs() -> set[str]:
    text = (REPO / "docs" / "metrics.md").read_text()
    section = text.split("### Client JMX families", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return {re.findall(r"`([a-z_:0-9]+)`", line)[0] for line in section.splitlines() if line.startswith("| `")}


def test_every_catalogue_attribute_has_a_documented_family() -> None:
    """docs/metrics.md lists what the client catalogue exports, no more and no less (counters with `_total`)."""
    beans = {
        "producer-metrics": PRODUCER,
        "consumer-fetch-manager-metrics": FETCH,
        "consumer-coordinator-metrics": COORDINATOR,
        "MirrorSourceConnector": MIRROR,
    }
    exported = set()
    for query in CLIENT_BEANS:
        bean = beans[query.pattern.split("type=", 1)[1].split(",", 1)[0]]
        for attribute in query.attributes:
            family = map_readings([Reading(bean, attribute, 1.0)], ClientIdentity("t"), NO_TOPICS)
            exported |= {f.name + ("_total" if f.kind == "counter" else "") for f in family.values()}
    assert len(exported) == sum(len(q.attributes) for q in CLIENT_BEANS)
    assert _client_families_in_docs() == exported
