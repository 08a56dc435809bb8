"""Naming rules: each row is one MBean attribute and the series jmx_exporter with Strimzi's rules would give."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from collectors.catalogue import REQUEST_TYPES, Reading, TopicSelection, scrape_plan
from collectors.mapping import BrokerIdentity, map_readings, merge_families, parse_object_name, point_for

ID = BrokerIdentity("prod", 2, "az-b")
IDENTITY = (("cluster", "prod"), ("broker", "2"), ("rack", "az-b"))

SUFFIX = {"gauge": "", "counter": "_total", "summary": "_sum"}
"""The suffix jmx_exporter gives the samples of each kind of family it writes here."""


@dataclass(frozen=True)
class Series:
    """The series jmx_exporter with Strimzi's rules would expose for one reading."""

    name: str
    kind: str
    value: float
    labels: tuple[tuple[str, str], ...]
    """In the order they are exposed."""

    @property
    def suffix(self) -> str:
        return SUFFIX[self.kind]


def series(name: str, kind: str, value: float, **labels: str) -> Series:
    """A row's expected series, its labels given in exposition order."""
    return Series(name, kind, value, tuple(labels.items()))


NAMING = [
    pytest.param(
        Reading("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", 3),
        series("kafka_server_replicamanager_underreplicatedpartitions", "gauge", 3.0),
        id="yammer-gauge",
    ),
    pytest.param(
        Reading("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "Count", 1024),
        series("kafka_server_brokertopicmetrics_bytesin", "counter", 1024.0),
        id="all-topics-meter-has-no-topic-label",
    ),
    pytest.param(
        Reading("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders", "Count", 7),
        series("kafka_server_brokertopicmetrics_bytesin", "counter", 7.0, topic="orders"),
        id="per-topic-meter",
    ),
    pytest.param(
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile", 4.5),
        series("kafka_network_requestmetrics_totaltimems", "gauge", 4.5, request="Produce", quantile="0.99"),
        id="percentile-as-quantile-gauge",
    ),
    pytest.param(
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "999thPercentile", 9),
        series("kafka_network_requestmetrics_totaltimems", "gauge", 9.0, request="Produce", quantile="0.999"),
        id="999th-percentile",
    ),
    pytest.param(
        Reading("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "Count", 12),
        series("kafka_network_requestmetrics_totaltimems_count", "counter", 12.0, request="Produce"),
        id="histogram-count-is-count-total-as-in-jmx-exporter-1",
    ),
    pytest.param(
        Reading("kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=Produce,error=NONE", "Count", 5),
        series("kafka_network_requestmetrics_errors", "counter", 5.0, request="Produce", error="NONE"),
        id="meter-with-two-labels",
    ),
    pytest.param(
        Reading("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "MeanRate", 0.9),
        series("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", "gauge", 0.9),
        id="percent-meter-meanrate",
    ),
    pytest.param(
        Reading("kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent", "Value", 0.8),
        series("kafka_network_socketserver_networkprocessoravgidle_percent", "gauge", 0.8),
        id="percent-gauge",
    ),
    pytest.param(
        Reading("kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica", "Value", 0),
        series("kafka_server_replicafetchermanager_maxlag", "gauge", 0.0, clientId="Replica"),
        id="label-names-keep-their-case",
    ),
    pytest.param(
        Reading("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "Count", 3),
        series("kafka_log_logflushstats_logflushrateandtimems_count", "counter", 3.0),
        id="timer-count",
    ),
    pytest.param(
        Reading("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "Mean", 2.5),
        series("kafka_log_logflushstats_logflushrateandtimems_mean", "gauge", 2.5),
        id="timer-mean",
    ),
    pytest.param(
        Reading("kafka.server:type=raft-metrics", "current-leader", 3),
        series("kafka_server_raftmetrics_current_leader", "gauge", 3.0),
        id="kraft-metric-strimzi-spelling",
    ),
    pytest.param(
        Reading("kafka.server:type=raft-metrics", "current-state", "leader"),
        series("kafka_server_raftmetrics_current_state", "gauge", 1.0, current_state="leader"),
        id="string-state-as-label",
    ),
    pytest.param(
        Reading("kafka.server:type=broker-metadata-metrics", "last-applied-record-lag-ms", 12),
        series("kafka_server_brokermetadatametrics_last_applied_record_lag_ms", "gauge", 12.0),
        id="broker-metadata-metrics",
    ),
    pytest.param(
        Reading("kafka.server:type=raft-metrics", "uncommitted-voter-change", 1),
        series("kafka_server_raftmetrics_uncommitted_voter_change", "gauge", 1.0),
        id="kip-853-pending-voter-change",
    ),
    pytest.param(
        Reading("kafka.server:type=SnapshotEmitter,name=LatestSnapshotGeneratedAgeMs", "Value", 15823),
        series("kafka_server_snapshotemitter_latestsnapshotgeneratedagems", "gauge", 15823.0),
        id="snapshot-age",
    ),
    pytest.param(
        Reading("java.lang:name=G1 Young Generation,type=GarbageCollector", "CollectionTime", 1500),
        series("jvm_gc_collection_seconds", "summary", 1.5, gc="G1 Young Generation"),
        id="gc-time-in-seconds",
    ),
    pytest.param(
        Reading("java.lang:type=Memory", "HeapMemoryUsage", 100, key="used"),
        series("jvm_memory_used_bytes", "gauge", 100.0, area="heap"),
        id="composite-key-picked-in-python",
    ),
    pytest.param(
        Reading("java.lang:type=OperatingSystem", "MaxFileDescriptorCount", 4096),
        series("process_max_fds", "gauge", 4096.0),
        id="max-fds",
    ),
]


@pytest.mark.parametrize(("reading", "want"), NAMING)
def test_naming_rules(reading: Reading, want: Series) -> None:
    point = point_for(reading)
    assert point is not None
    assert (point.name, point.kind, point.suffix, point.labels) == (want.name, want.kind, want.suffix, want.labels)
    assert point.value == pytest.approx(want.value)


@pytest.mark.parametrize(
    "reading",
    [
        pytest.param(Reading("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "OneMinuteRate", 1), id="ewma"),
        pytest.param(Reading("kafka.server:type=KafkaServer,name=ClusterId", "Value", "abc"), id="string-value"),
        pytest.param(Reading("java.lang:type=Memory", "HeapMemoryUsage", 1, key="weird"), id="unknown-key"),
        pytest.param(Reading("com.example:type=Other", "Value", 1), id="foreign-domain"),
    ],
)
def test_unexported_readings(reading: Reading) -> None:
    assert point_for(reading) is None


def test_quoted_object_name_values_are_unquoted() -> None:
    assert parse_object_name('kafka.server:type=Fetch,client-id="a,\\"b\\\\",user=x') == (
        "kafka.server",
        [("type", "Fetch"), ("client-id", 'a,"b\\'), ("user", "x")],
    )


def test_every_sample_carries_cluster_broker_and_rack() -> None:
    families = map_readings([Reading("kafka.server:type=ReplicaManager,name=LeaderCount", "Value", 4)], ID)
    assert families["kafka_server_replicamanager_leadercount"].samples[0].labels == IDENTITY


def test_topic_allow_and_deny_bound_cardinality() -> None:
    readings = [
        Reading(f"kafka.log:type=Log,name=Size,topic={topic},partition=0", "Value", 1)
        for topic in ("orders", "payments", "__consumer_offsets")
    ]
    selection = TopicSelection(per_partition=True, allow="^[a-z]", deny="^pay")
    samples = map_readings(readings, ID, selection)["kafka_log_log_size"].samples
    assert [dict(s.labels)["topic"] for s in samples] == ["orders"]


def test_families_merge_across_brokers() -> None:
    reading = Reading("kafka.server:type=ReplicaManager,name=LeaderCount", "Value", 1)
    parts = [map_readings([reading], BrokerIdentity("c", b, None)) for b in (1, 2, 3)]
    merged = merge_families(parts)["kafka_server_replicamanager_leadercount"]
    assert [dict(s.labels)["broker"] for s in merged.samples] == ["1", "2", "3"]


def test_plan_reads_the_required_requests_and_skips_zookeeper_beans_on_kraft() -> None:
    plan = scrape_plan()
    patterns = [q.pattern for q in plan]
    for request in REQUEST_TYPES:
        assert f"kafka.network:type=RequestMetrics,name=*,request={request}" in patterns
    assert not any("ZooKeeper" in p or "EventQueueSize" in p for p in patterns)
    assert any("ZooKeeper" in q.pattern for q in scrape_plan(zookeeper_mode=True))
    assert not any("topic=" in p for p in patterns), "per-topic beans must be opt-in"
    assert any("topic=" in q.pattern for q in scrape_plan(TopicSelection(per_topic=True)))


def test_share_acknowledgements_are_one_counter_per_ack_type() -> None:
    """KIP-1103's meter, read by the catalogue on every broker, named as jmx_exporter with Strimzi's rules names it."""
    bean = "kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType="
    readings = [Reading(bean + kind, "Count", n) for kind, n in (("Accept", 9), ("Reject", 2))]
    family = map_readings(readings, BrokerIdentity("c", 1, None))[
        "kafka_server_sharegroupmetrics_recordacknowledgements"
    ]
    assert family.kind == "counter"
    assert {dict(s.labels)["ackType"]: s.value for s in family.samples} == {"Accept": 9, "Reject": 2}
    assert any(q.pattern == bean + "*" and q.attributes == ("Count",) for q in scrape_plan())


def test_streams_heartbeat_errors_are_read_on_every_broker_without_the_request_type_in_full() -> None:
    """KIP-1071: a Streams client the coordinator refuses shows only in this meter (docs/lag.md, "Streams groups"),
    read with no histogram of the request type, into the errors family every request type shares."""
    bean = "kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=StreamsGroupHeartbeat,error="
    assert any(q.pattern == bean + "*" and q.attributes == ("Count",) for q in scrape_plan())
    assert not any("name=*,request=StreamsGroupHeartbeat" in q.pattern for q in scrape_plan())
    readings = [Reading(bean + error, "Count", n) for error, n in (("NONE", 40), ("INVALID_REQUEST", 1))]
    family = map_readings(readings, BrokerIdentity("c", 1, None))["kafka_network_requestmetrics_errors"]
    assert family.kind == "counter"
    assert {(dict(s.labels)["request"], dict(s.labels)["error"]): s.value for s in family.samples} == {
        ("StreamsGroupHeartbeat", "NONE"): 40,
        ("StreamsGroupHeartbeat", "INVALID_REQUEST"): 1,
    }


def test_tiered_storage_gauges_are_read_broker_wide_and_per_topic_only_when_opted_in() -> None:
    """KIP-963's gauges under jmx_exporter's names: broker-wide on every scrape, per tiered topic with `per_topic`
    (copy lag against each topic's allowance); the error meters are counters named after their beans."""
    gauges = "kafka.server:type=BrokerTopicMetrics,name=Remote*"
    assert any(q.pattern == gauges and q.attributes == ("Value",) for q in scrape_plan())
    assert any(q.pattern == gauges + ",topic=*" for q in scrape_plan(TopicSelection(per_topic=True)))
    bean = "kafka.server:type=BrokerTopicMetrics,name="
    readings = [
        Reading(bean + "RemoteCopyLagBytes", "Value", 5.0),
        Reading(bean + "RemoteCopyLagBytes,topic=orders", "Value", 3.0),
        Reading(bean + "RemoteFetchErrorsPerSec", "Count", 2.0),
        Reading("kafka.log.remote:type=RemoteStorageThreadPool,name=RemoteLogReaderTaskQueueSize", "Value", 4.0),
    ]
    families = map_readings(readings, BrokerIdentity("c", 1, None), TopicSelection(per_topic=True, deny="^orders$"))
    lag = families["kafka_server_brokertopicmetrics_remotecopylagbytes"]
    assert lag.kind == "gauge" and [s.value for s in lag.samples] == [5.0]  # the denied topic's is dropped
    assert families["kafka_server_brokertopicmetrics_remotefetcherrors"].kind == "counter"
    assert families["kafka_log_remote_remotestoragethreadpool_remotelogreadertaskqueuesize"].samples[0].value == 4.0
