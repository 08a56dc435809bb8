"""What a broker scrape reads over JMX: the MBeans of chapter 13 (Kafka: The Definitive Guide, 2nd ed.), as data (pure);
and what a client target's scrape reads (`CLIENT_BEANS`).

`scrape_plan` turns the catalogue into the `BeanQuery` list one transport call executes; `mapping.py` names what
comes back. Adding a bean here is all it takes to export it: names follow from the jmx_exporter/Strimzi rules.
"""

from __future__ import annotations

from dataclasses import dataclass

HISTOGRAM_ATTRIBUTES = (
    "Count",
    "50thPercentile",
    "75thPercentile",
    "95thPercentile",
    "98thPercentile",
    "99thPercentile",
    "999thPercentile",
)
"""Yammer histogram/timer attributes we export: the count and the percentiles (never the EWMA rates)."""

REQUEST_TYPES = ("Produce", "FetchConsumer", "FetchFollower", "Metadata", "OffsetCommit")
"""`request=` values whose RequestMetrics are read (the minimum set); each adds about 40 series."""


@dataclass(frozen=True)
class BeanQuery:
    """One JMX read: every MBean matching `pattern` (an ObjectName pattern), these attributes of each."""

    pattern: str
    """An exact name (no wildcard) is read without a lookup and its readings carry it as written here, so its keys
    must be in the order the broker registers them (`type=...,name=...`), which `mapping.py` relies on."""
    attributes: tuple[str, ...]
    """Attribute names; a composite attribute (HeapMemoryUsage) comes back as one reading per key."""


@dataclass(frozen=True)
class Reading:
    """One value a transport read: the MBean's ObjectName as the broker registered it, attribute, value."""

    bean: str
    """`domain:k1=v1,k2=v2` in registration order, as `ObjectName.toString()` gives it."""
    attribute: str
    value: float | str
    """Numbers as float (booleans as 0/1); strings as read, only where the catalogue asks for one."""
    key: str | None = None
    """The CompositeData key (`used`, `max`, ...) of a composite attribute, else None."""


@dataclass(frozen=True)
class TopicSelection:
    """Which per-topic and per-partition beans are read: both off unless the operator opts in.

    The regexes bound cardinality: a topic is kept when `allow` matches (re.search) and `deny` does not.
    """

    per_topic: bool = False
    """BrokerTopicMetrics per topic (`topic` label)."""
    per_partition: bool = False
    """kafka.log Log and kafka.cluster Partition beans per partition (`topic`, `partition` labels)."""
    allow: str = ".*"
    deny: str | None = None


TIERED_STORAGE_BEANS: tuple[BeanQuery, ...] = (
    # KIP-963 gauges (copy and delete lag, remote size); the Remote*PerSec meters come with `name=*` Count above.
    BeanQuery("kafka.server:type=BrokerTopicMetrics,name=Remote*", ("Value",)),
    # The remote reader's queue and idle share (4.x domain; 3.9 registers them under a non-kafka domain, unread).
    BeanQuery("kafka.log.remote:type=RemoteStorageThreadPool,name=*", ("Value",)),
    # RemoteLogManagerTasksAvgIdlePercent (Value) and RemoteLogReaderFetchRateAndTimeMs (a timer), not the
    # per-partition retention gauges (they have topic and partition keys).
    BeanQuery("kafka.log.remote:type=RemoteLogManager,name=*", ("Value", *HISTOGRAM_ATTRIBUTES)),
)
"""Tiered storage (KIP-405/963/1018): registered only when `remote.log.storage.system.enable=true`, so on other
brokers these patterns match nothing (one lookup in `kafka.log.remote`, the rest shares `kafka.server`'s)."""

BROKER_BEANS: tuple[BeanQuery, ...] = (
    BeanQuery("kafka.server:type=ReplicaManager,name=*", ("Value",)),
    BeanQuery("kafka.server:type=ReplicaManager,name=*", ("Count",)),  # IsrShrinks/IsrExpands/FailedIsrUpdates
    BeanQuery("kafka.controller:type=KafkaController,name=*", ("Value",)),
    BeanQuery("kafka.controller:type=ControllerStats,name=*", ("Count",)),
    BeanQuery("kafka.controller:type=ControllerEventManager,name=*", HISTOGRAM_ATTRIBUTES),
    BeanQuery("kafka.server:type=KafkaRequestHandlerPool,name=*", ("MeanRate",)),
    BeanQuery("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", ("OneMinuteRate",)),
    BeanQuery("kafka.network:type=SocketServer,name=*", ("Value",)),
    BeanQuery("kafka.network:type=RequestChannel,name=RequestQueueSize", ("Value",)),
    BeanQuery("kafka.server:type=BrokerTopicMetrics,name=*", ("Count",)),
    BeanQuery("kafka.server:type=ReplicaFetcherManager,name=*,clientId=*", ("Value",)),
    BeanQuery("kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=*", ("Value",)),
    # Mean too: Yammer's is sum / count since start, so two readings give the mean flush time between them.
    BeanQuery("kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", (*HISTOGRAM_ATTRIBUTES, "Mean")),
    BeanQuery("kafka.log:type=LogManager,name=OfflineLogDirectoryCount", ("Value",)),
    BeanQuery("kafka.server:type=KafkaServer,name=BrokerState", ("Value",)),
    BeanQuery(
        "kafka.server:type=raft-metrics",
        (
            "current-state",
            "current-leader",
            "current-epoch",
            "high-watermark",
            "log-end-offset",
            "commit-latency-avg",
            "commit-latency-max",
            "election-latency-avg",
            "election-latency-max",
            "number-unknown-voter-connections",
            "number-of-voters",
            # KIP-853, registered on the quorum leader only (KafkaRaftMetrics.addLeaderMetrics): left out elsewhere.
            "number-of-observers",
            "uncommitted-voter-change",
        ),
    ),
    BeanQuery(
        "kafka.server:type=broker-metadata-metrics",
        (
            "last-applied-record-offset",
            "last-applied-record-lag-ms",
            "metadata-load-error-count",
            "metadata-apply-error-count",
        ),
    ),
    # LatestSnapshotGeneratedAgeMs counts from this node's start until it writes its first metadata snapshot.
    BeanQuery("kafka.server:type=SnapshotEmitter,name=*", ("Value",)),
    # KIP-1103: records acknowledged by share consumers, one meter per ackType (Accept, Release, Reject, Renew).
    BeanQuery("kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=*", ("Count",)),
    # KIP-1071: the only trace of a Streams client the coordinator refuses (a restarted instance whose topology
    # changed gets INVALID_REQUEST and never joins); the errors alone, not the ~40 series of a full request type.
    BeanQuery("kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=StreamsGroupHeartbeat,error=*", ("Count",)),
    *TIERED_STORAGE_BEANS,
)
"""Broker-wide beans (no topic label), for KRaft clusters and ZooKeeper clusters alike."""

ZOOKEEPER_BEANS: tuple[BeanQuery, ...] = (
    BeanQuery("kafka.controller:type=ControllerEventManager,name=EventQueueSize", ("Value",)),
    BeanQuery("kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs", HISTOGRAM_ATTRIBUTES),
    BeanQuery("kafka.server:type=ZooKeeperClientMetrics,name=ZooKeeperRequestLatencyMs", HISTOGRAM_ATTRIBUTES),
)
"""Beans only a ZooKeeper-mode controller or broker registers: not queried on 4.x, where
they cannot exist, so a 4.x scrape carries no empty queries and logs nothing about them."""

JVM_BEANS: tuple[BeanQuery, ...] = (
    BeanQuery("java.lang:type=GarbageCollector,name=*", ("CollectionCount", "CollectionTime")),
    BeanQuery("java.lang:type=Memory", ("HeapMemoryUsage", "NonHeapMemoryUsage")),
    BeanQuery(
        "java.lang:type=OperatingSystem", ("OpenFileDescriptorCount", "MaxFileDescriptorCount", "ProcessCpuTime")
    ),
    BeanQuery("java.lang:type=Threading", ("ThreadCount",)),
)
"""JVM beans, exported under the names of jmx_exporter's built-in JVM metrics (client_java 1.x)."""


MIRROR_STATS = ("", "-max", "-min", "-avg")
"""MirrorMaker 2 keeps each latency as the latest value plus its max, min and avg over the sample window."""

CLIENT_BEANS: tuple[BeanQuery, ...] = (
    BeanQuery(
        "kafka.producer:type=producer-metrics,client-id=*",
        (
            "record-error-rate",
            "record-error-total",
            "record-retry-rate",
            "record-retry-total",
            "request-latency-avg",
            "produce-throttle-time-avg",
        ),
    ),
    BeanQuery(
        "kafka.consumer:type=consumer-fetch-manager-metrics,client-id=*",
        ("fetch-latency-avg", "records-lag-max", "fetch-throttle-time-avg"),
    ),
    BeanQuery(
        "kafka.consumer:type=consumer-coordinator-metrics,client-id=*", ("commit-latency-avg", "assigned-partitions")
    ),
    # `,*`: Kafka 4.x names these beans `source=S,target=T,topic=...,partition=P`, older releases without `source`.
    BeanQuery(
        "kafka.connect.mirror:type=MirrorSourceConnector,*",
        tuple(f"{metric}{stat}" for metric in ("replication-latency-ms", "record-age-ms") for stat in MIRROR_STATS),
    ),
)
"""What a client target's scrape reads (the chapter's client monitoring). The client-id
patterns match exactly the keys {type, client-id}: the client-wide beans, never the per-topic or per-node ones,
so cardinality stays one series per client. A JVM that is no producer (or no MirrorMaker 2) simply matches none
of that group's beans; the `-total` companions are the counters Strimzi's rules export for `rate()`."""


def request_beans(requests: tuple[str, ...] = REQUEST_TYPES) -> tuple[BeanQuery, ...]:
    """RequestMetrics for the chosen request types only: every API has ~10 beans, most of no interest."""
    out: list[BeanQuery] = []
    for request in requests:
        # `name=*,request=R` matches exactly the key set {type,name,request}: the histograms (TotalTimeMs and
        # its six parts, RequestBytes, ...), not RequestsPerSec (has `version`) nor ErrorsPerSec (has `error`).
        out.append(BeanQuery(f"kafka.network:type=RequestMetrics,name=*,request={request}", HISTOGRAM_ATTRIBUTES))
        out.append(
            BeanQuery(f"kafka.network:type=RequestMetrics,name=RequestsPerSec,request={request},version=*", ("Count",))
        )
        out.append(
            BeanQuery(f"kafka.network:type=RequestMetrics,name=ErrorsPerSec,request={request},error=*", ("Count",))
        )
    return tuple(out)


def topic_beans(selection: TopicSelection) -> tuple[BeanQuery, ...]:
    """Per-topic and per-partition beans when opted in; the regexes are applied to what comes back."""
    out: list[BeanQuery] = []
    if selection.per_topic:
        out.append(BeanQuery("kafka.server:type=BrokerTopicMetrics,name=*,topic=*", ("Count",)))
        # The KIP-963 gauges of each tiered topic (only those register them): copy lag judged per topic.
        out.append(BeanQuery("kafka.server:type=BrokerTopicMetrics,name=Remote*,topic=*", ("Value",)))
    if selection.per_partition:
        out.append(BeanQuery("kafka.log:type=Log,name=*,topic=*,partition=*", ("Value",)))
        out.append(BeanQuery("kafka.cluster:type=Partition,name=*,topic=*,partition=*", ("Value",)))
    return tuple(out)


NO_TOPICS = TopicSelection()
"""The default: broker-wide beans only."""


def scrape_plan(
    selection: TopicSelection = NO_TOPICS,
    requests: tuple[str, ...] = REQUEST_TYPES,
    zookeeper_mode: bool = False,
) -> tuple[BeanQuery, ...]:
    """Every query of one broker scrape, in a stable order; `zookeeper_mode` only for 3.x ZooKeeper clusters."""
    plan = BROKER_BEANS + request_beans(requests) + JVM_BEANS + topic_beans(selection)
    return plan + ZOOKEEPER_BEANS if zookeeper_mode else plan
