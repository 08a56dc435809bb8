"""The cluster overview dashboard: the broker metrics of chapter 13 (collectors' JMX families, Strimzi names), the
balance table, offline / under-replicated / under-min-ISR partitions with the common-broker diagnosis (cluster state
from the Admin API), the controller and KRaft quorum, request latency percentiles and message conversions.
"""

from __future__ import annotations

from dashboards.grafana import (
    Json,
    Query,
    Row,
    bad_above,
    custom_variable,
    dashboard,
    good_above,
    query_variable,
    stat,
    table,
    timeseries,
    value_mappings,
)
from dashboards.kraft import kraft_quorum

UID = "kafka-pulse-cluster"
C = 'cluster="$cluster"'
CB = 'cluster="$cluster", broker=~"$broker"'
ALL_TOPICS = 'cluster="$cluster", broker=~"$broker", topic=""'
"""The all-topics meters: their series carry no `topic` label, which `topic=""` selects."""
RATE = "[$__rate_interval]"
QUANTILES = ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999")
"""The `quantile` label values of Yammer percentiles, spelled as the collectors (and Strimzi) spell them."""
UP = value_mappings({"1": ("up", "green"), "0": ("down", "red")})


def _per_broker(metric: str, selector: str = CB, how: str = "sum") -> str:
    return f"{how} by (broker) ({metric}{{{selector}}})"


def _rate_per_broker(metric: str, selector: str = CB) -> str:
    return f"sum by (broker) (rate({metric}{{{selector}}}{RATE}))"


def _exactly_one() -> tuple[tuple[float | None, str], ...]:
    return ((None, "red"), (1, "green"), (2, "red"))


def health() -> Row:
    return Row(
        "Health",
        [
            stat(
                "Brokers online",
                [
                    Query(f"count(kafka_server_replicamanager_leadercount{{{C}}})", "JMX"),
                    Query(f"kafka_pulse_cluster_brokers_missing{{{C}}}", "missing from metadata"),
                ],
                description="Brokers whose JMX scrape succeeded, and expected brokers absent from the metadata.",
                text_mode="value_and_name",
            ),
            stat(
                "Active controllers",
                [Query(f"sum(kafka_controller_kafkacontroller_activecontrollercount{{{C}}})")],
                description="Must be exactly 1 (chapter 13): 0 means no controller, 2 a split brain.",
                thresholds=_exactly_one(),
            ),
            stat(
                "Controller",
                [
                    Query(
                        f"max by (broker) (kafka_controller_kafkacontroller_activecontrollercount{{{C}}}) == 1",
                        "broker {{broker}}",
                    )
                ],
                description="The broker whose ActiveControllerCount is 1 (the KRaft quorum leader).",
                text_mode="name",
            ),
            stat(
                "Offline partitions",
                [
                    Query(f"max(kafka_controller_kafkacontroller_offlinepartitionscount{{{C}}})", "controller"),
                    Query(f"kafka_pulse_cluster_offline_partitions{{{C}}}", "metadata"),
                ],
                description="Partitions without a leader: producers and consumers of them are stopped. Every KRaft "
                "controller reports the count, so it is max, not sum.",
                thresholds=bad_above(1),
                text_mode="value_and_name",
            ),
            stat(
                "Under-replicated partitions",
                [
                    Query(f"sum(kafka_server_replicamanager_underreplicatedpartitions{{{C}}})", "leaders"),
                    Query(f"kafka_pulse_cluster_under_replicated_partitions{{{C}}}", "metadata"),
                ],
                description="ISR smaller than the replica set; each broker counts the partitions it leads.",
                thresholds=bad_above(1, "orange"),
                text_mode="value_and_name",
            ),
            stat(
                "Under min ISR",
                [
                    Query(f"sum(kafka_server_replicamanager_underminisrpartitioncount{{{C}}})", "leaders"),
                    Query(f"kafka_pulse_cluster_under_min_isr_partitions{{{C}}}", "metadata"),
                ],
                description="ISR below min.insync.replicas: acks=all produce to these partitions fails.",
                thresholds=bad_above(1),
                text_mode="value_and_name",
            ),
            stat(
                "Under-replication diagnosis",
                [
                    Query(
                        f"max by (scope, broker) (kafka_pulse_cluster_under_replicated_diagnosis{{{C}}}) == 1",
                        "{{scope}} {{broker}}",
                    )
                ],
                description="Chapter 13: when one broker is missing from the ISR of every under-replicated partition "
                "(scope broker), that broker is the problem; otherwise look cluster-wide (network, load). none: "
                "nothing is under-replicated.",
                text_mode="name",
                width=4,
            ),
            stat(
                "Fenced brokers",
                [Query(f"max(kafka_controller_kafkacontroller_fencedbrokercount{{{C}}})")],
                description="Registered brokers the controller has fenced (missed heartbeats).",
                thresholds=bad_above(1),
            ),
            stat(
                "Unclean leader elections",
                [
                    Query(
                        f"sum(increase(kafka_controller_controllerstats_uncleanleaderelections_total{{{C}}}[$__range]))"
                    )
                ],
                description="In the dashboard's time range: each one may have lost acknowledged records.",
                thresholds=bad_above(1),
                decimals=0,
            ),
            stat(
                "Same-rack partitions",
                [Query(f"kafka_pulse_cluster_same_rack_partitions{{{C}}}")],
                description="Partitions with several replicas, all in one rack: losing that AZ takes them offline.",
                thresholds=bad_above(1, "orange"),
            ),
            stat(
                "Preferred replica imbalance",
                [Query(f"max(kafka_controller_kafkacontroller_preferredreplicaimbalancecount{{{C}}})")],
                description="Partitions not led by their preferred replica: leadership is skewed.",
                thresholds=bad_above(1, "orange"),
            ),
            stat(
                "Collector",
                [
                    Query(f"min(kafka_pulse_jmx_up{{{C}}})", "JMX"),
                    Query(f"kafka_pulse_cluster_state_up{{{C}}}", "Admin API"),
                ],
                description="Whether kafka-pulse's latest scrapes succeeded; while JMX fails, broker series are "
                "withheld rather than shown stale.",
                mappings=UP,
                thresholds=good_above(1),
                text_mode="value_and_name",
            ),
        ],
    )


def slow_brokers() -> Row:
    """The slow-broker detector's verdicts (collectors/slow_broker.py): who is flagged, by how much, and on which
    signal, so a flag can be read against the request and flush panels below."""
    return Row(
        "Slow brokers",
        [
            stat(
                "Brokers flagged slow",
                [Query(f"sum(kafka_pulse_broker_slow{{{C}}})")],
                description="Brokers flagged slow: a signal above its floor, 3x its own history and 3x its peers' "
                "median for several evaluations in a row (docs/metrics.md, Slow brokers).",
                thresholds=((None, "green"), (1, "orange")),
            ),
            stat(
                "Detection suspended",
                [Query(f"max(kafka_pulse_broker_slow_detection_suspended{{{C}}})")],
                description="1 when too many brokers looked slow at once to single one out: the cluster or the "
                "client is slow.",
                mappings=value_mappings({"0": ("no", "green"), "1": ("yes: cluster-wide", "orange")}),
            ),
            timeseries(
                "Slow-broker score",
                [Query(_per_broker("kafka_pulse_broker_slow_score", how="max"), "{{broker}}")],
                description="The worst signal's ratio to the bar it must pass; 1 and above is elevated.",
                thresholds=((None, "green"), (1, "orange")),
                width=8,
            ),
            timeseries(
                "Signal scores",
                [
                    Query(
                        f"max by (broker, signal) (kafka_pulse_broker_slow_signal_score{{{CB}}})",
                        "{{broker}} {{signal}}",
                    )
                ],
                description="Each signal against the broker's own history and its peers (probe answer time, "
                "canary latency, request percentiles, handler and network busy, queue, log flush).",
                width=8,
            ),
        ],
    )


def balance() -> Row:
    by = "broker, rack"
    return Row(
        "Balance",
        [
            table(
                "Brokers",
                [
                    Query(f"sum by ({by}) (kafka_pulse_cluster_broker_partitions{{{CB}}})"),
                    Query(f"sum by ({by}) (kafka_pulse_cluster_broker_leaders{{{CB}}})"),
                    Query(f"sum by ({by}) (kafka_pulse_cluster_broker_preferred_leader_imbalance{{{CB}}})"),
                    Query(f"sum by ({by}) (rate(kafka_server_brokertopicmetrics_bytesin_total{{{ALL_TOPICS}}}{RATE}))"),
                    Query(
                        f"sum by ({by}) (rate(kafka_server_brokertopicmetrics_bytesout_total{{{ALL_TOPICS}}}{RATE}))"
                    ),
                    Query(f"sum by ({by}) (kafka_pulse_cluster_broker_partition_skew_ratio{{{CB}}})"),
                    Query(f"sum by ({by}) (kafka_pulse_cluster_broker_leader_skew_ratio{{{CB}}})"),
                ],
                columns={
                    "broker": "Broker",
                    "rack": "Rack",
                    "Value #A": "Partitions",
                    "Value #B": "Leaders",
                    "Value #C": "Not preferred leader",
                    "Value #D": "Bytes in/s",
                    "Value #E": "Bytes out/s",
                    "Value #F": "Partition skew",
                    "Value #G": "Leader skew",
                },
                units={
                    "Bytes in/s": "Bps",
                    "Bytes out/s": "Bps",
                    "Partition skew": "percentunit",
                    "Leader skew": "percentunit",
                },
                description="Replicas and leaders per broker (Admin API) next to its traffic: skew is (value - mean) "
                "/ mean over the expected brokers, so a hot or empty broker stands out.",
                width=24,
                height=7,
                sort_by="Broker",
                descending=False,
            ),
            timeseries(
                "Partitions per broker",
                [Query(_per_broker("kafka_server_replicamanager_partitioncount"), "{{broker}}")],
                width=8,
            ),
            timeseries(
                "Leaders per broker",
                [Query(_per_broker("kafka_server_replicamanager_leadercount"), "{{broker}}")],
                width=8,
            ),
            timeseries(
                "Log size per broker",
                [Query(_per_broker("kafka_log_log_size"), "{{broker}}")],
                description="Needs collectors.topic_metrics: partition.",
                unit="bytes",
                width=8,
            ),
        ],
    )


def throughput() -> Row:
    return Row(
        "Throughput",
        [
            timeseries(
                "Bytes in",
                [Query(_rate_per_broker("kafka_server_brokertopicmetrics_bytesin_total", ALL_TOPICS), "{{broker}}")],
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Bytes out",
                [Query(_rate_per_broker("kafka_server_brokertopicmetrics_bytesout_total", ALL_TOPICS), "{{broker}}")],
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Messages in",
                [Query(_rate_per_broker("kafka_server_brokertopicmetrics_messagesin_total", ALL_TOPICS), "{{broker}}")],
                unit="short",
                width=8,
            ),
            timeseries(
                "Replication bytes",
                [
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_replicationbytesin_total", ALL_TOPICS),
                        "in {{broker}}",
                    ),
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_replicationbytesout_total", ALL_TOPICS),
                        "out {{broker}}",
                    ),
                ],
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Produce and fetch requests",
                [
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_totalproducerequests_total", ALL_TOPICS),
                        "produce {{broker}}",
                    ),
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_totalfetchrequests_total", ALL_TOPICS),
                        "fetch {{broker}}",
                    ),
                ],
                unit="reqps",
                width=8,
            ),
            timeseries(
                "Busiest topics (bytes in)",
                [
                    Query(
                        f'topk(10, sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesin_total{{{C}, topic!=""}}'
                        f"{RATE})))",
                        "{{topic}}",
                    )
                ],
                description="Per-topic meters exist with collectors.topic_metrics: topic (or partition), for the "
                "topics topic_allow/topic_deny let through.",
                unit="Bps",
                width=8,
            ),
            timeseries(
                "Failed and rejected",
                [
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_failedproducerequests_total", ALL_TOPICS),
                        "failed produce {{broker}}",
                    ),
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_failedfetchrequests_total", ALL_TOPICS),
                        "failed fetch {{broker}}",
                    ),
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_bytesrejected_total", ALL_TOPICS),
                        "bytes rejected {{broker}}",
                    ),
                ],
                description="Failed produce/fetch requests per second and bytes rejected (record too large).",
                width=8,
            ),
        ],
    )


def requests() -> Row:
    def breakdown(request: str) -> list[Query]:
        parts = (
            "requestqueuetimems",
            "localtimems",
            "remotetimems",
            "throttletimems",
            "responsequeuetimems",
            "responsesendtimems",
        )
        return [
            Query(
                f'max(kafka_network_requestmetrics_{part}{{{CB}, request="{request}", quantile="$quantile"}})',
                part.removesuffix("ms").removesuffix("time"),
            )
            for part in parts
        ]

    errors = "kafka_network_requestmetrics_errors_total"
    return Row(
        "Requests",
        [
            timeseries(
                "Request latency p$quantile",
                [
                    Query(
                        f'max by (request) (kafka_network_requestmetrics_totaltimems{{{CB}, quantile="$quantile", '
                        'request=~"Produce|FetchConsumer|FetchFollower|Metadata|OffsetCommit|JoinGroup"})',
                        "{{request}}",
                    )
                ],
                description="Total time per request type, worst broker: Yammer percentiles of different brokers "
                "must not be averaged.",
                unit="ms",
            ),
            timeseries(
                "Requests per second",
                [
                    Query(
                        f"sum by (request) (rate(kafka_network_requestmetrics_requests_total{{{CB}}}{RATE}))",
                        "{{request}}",
                    )
                ],
                unit="reqps",
            ),
            timeseries(
                "Produce time breakdown p$quantile",
                breakdown("Produce"),
                description="Where a produce request's time goes: queue, local (write), remote (waiting for the "
                "followers with acks=all), throttle, response queue and send. Worst broker.",
                unit="ms",
                stack=True,
                width=8,
            ),
            timeseries(
                "Fetch (consumer) time breakdown p$quantile",
                breakdown("FetchConsumer"),
                description="Remote time here is the fetch's long-poll wait (fetch.max.wait.ms), not a problem.",
                unit="ms",
                stack=True,
                width=8,
            ),
            timeseries(
                "Error ratio per request type",
                [
                    Query(
                        f'(sum by (request) (rate({errors}{{{CB}, error!="NONE"}}{RATE})) or sum by (request) '
                        f'(rate({errors}{{{CB}, error="NONE"}}{RATE})) * 0) / sum by (request) '
                        f"(rate({errors}{{{CB}}}{RATE}))",
                        "{{request}}",
                    )
                ],
                description="Responses with an error code over all responses (ErrorsPerSec; error=NONE counts the "
                "successes). The best broker-side availability SLI.",
                unit="percentunit",
                width=8,
            ),
            timeseries(
                "Request queue",
                [Query(_per_broker("kafka_network_requestchannel_requestqueuesize"), "{{broker}}")],
                description="Requests waiting for a handler thread: grows when handlers are saturated.",
                width=8,
            ),
            timeseries(
                "Purgatory",
                [
                    Query(
                        f"sum by (broker, delayedOperation) (kafka_server_delayedoperationpurgatory_purgatorysize"
                        f'{{{CB}, delayedOperation=~"Produce|Fetch"}})',
                        "{{delayedOperation}} {{broker}}",
                    )
                ],
                description="Produce requests waiting for acks=all replication; fetches long-polling for data.",
                width=8,
            ),
            timeseries(
                "Handler and network idle",
                [
                    Query(
                        _per_broker(
                            "kafka_server_kafkarequesthandlerpool_brokerrequesthandleravgidle_percent", how="max"
                        ),
                        "handlers {{broker}}",
                    ),
                    Query(
                        _per_broker("kafka_network_socketserver_networkprocessoravgidle_percent", how="max"),
                        "network {{broker}}",
                    ),
                ],
                description="Share of time the request handler and network threads are idle: below 0.3 the broker "
                "is saturated (chapter 13).",
                unit="percentunit",
                minimum=0,
                width=8,
            ),
        ],
    )


def conversions() -> Row:
    return Row(
        "Message conversions",
        [
            timeseries(
                "Conversions per second",
                [
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_producemessageconversions_total", ALL_TOPICS),
                        "produce {{broker}}",
                    ),
                    Query(
                        _rate_per_broker("kafka_server_brokertopicmetrics_fetchmessageconversions_total", ALL_TOPICS),
                        "fetch {{broker}}",
                    ),
                ],
                description="Records converted between message formats for old clients: they cost broker CPU and "
                "memory and defeat zero-copy fetches.",
            ),
            timeseries(
                "Conversion time p$quantile",
                [
                    Query(
                        f"max by (request) (kafka_network_requestmetrics_messageconversionstimems{{{CB}, "
                        f'quantile="$quantile"}})',
                        "{{request}}",
                    )
                ],
                unit="ms",
            ),
        ],
    )


def controller() -> Row:
    return Row(
        "Controller and KRaft",
        [
            timeseries(
                "Active controller",
                [Query(_per_broker("kafka_controller_kafkacontroller_activecontrollercount"), "{{broker}}")],
                description="Which node leads the quorum; a change is a controller failover.",
                width=8,
                draw="bars",
            ),
            table(
                "KRaft quorum",
                [
                    Query(f"max by (broker, current_state) (kafka_server_raftmetrics_current_state{{{CB}}})"),
                    Query(f"max by (broker) (kafka_server_raftmetrics_current_epoch{{{CB}}})"),
                ],
                columns={"broker": "Node", "current_state": "State", "Value #B": "Epoch"},
                width=8,
                sort_by="Node",
                descending=False,
            ),
            timeseries(
                "Controller event queue p$quantile",
                [
                    Query(
                        f'max(kafka_controller_controllereventmanager_eventqueuetimems{{{CB}, quantile="$quantile"}})',
                        "queue time",
                    ),
                    Query(
                        f"max(kafka_controller_controllereventmanager_eventqueueprocessingtimems{{{CB}, "
                        'quantile="$quantile"})',
                        "processing time",
                    ),
                ],
                unit="ms",
                width=8,
            ),
            timeseries(
                "Metadata lag",
                [
                    Query(
                        _per_broker("kafka_controller_kafkacontroller_lastappliedrecordlagms", how="max"),
                        "controller {{broker}}",
                    ),
                    Query(
                        _per_broker("kafka_server_brokermetadatametrics_last_applied_record_lag_ms", how="max"),
                        "broker {{broker}}",
                    ),
                ],
                description="How far each node's applied metadata trails the log: a lagging broker acts on stale "
                "leaders and ISRs.",
                unit="ms",
                width=8,
            ),
            timeseries(
                "Raft commit latency",
                [Query(_per_broker("kafka_server_raftmetrics_commit_latency_avg", how="max"), "{{broker}}")],
                unit="ms",
                width=8,
            ),
            timeseries(
                "Metadata errors",
                [
                    Query(f"max(kafka_controller_kafkacontroller_metadataerrorcount{{{C}}})", "controller"),
                    Query(
                        f"sum(kafka_server_brokermetadatametrics_metadata_load_error_count{{{CB}}}) + "
                        f"sum(kafka_server_brokermetadatametrics_metadata_apply_error_count{{{CB}}})",
                        "brokers",
                    ),
                ],
                thresholds=bad_above(1),
                width=8,
            ),
        ],
    )


def replication() -> Row:
    return Row(
        "Replication",
        [
            timeseries(
                "ISR shrinks and expands",
                [
                    Query(_rate_per_broker("kafka_server_replicamanager_isrshrinks_total"), "shrink {{broker}}"),
                    Query(_rate_per_broker("kafka_server_replicamanager_isrexpands_total"), "expand {{broker}}"),
                ],
                description="Steady shrinking and expanding (flapping) points at a slow follower or network.",
                width=8,
            ),
            timeseries(
                "Follower max lag",
                [
                    Query(
                        _per_broker("kafka_server_replicafetchermanager_maxlag", f'{CB}, clientId="Replica"', "max"),
                        "{{broker}}",
                    )
                ],
                description="Messages the broker's most lagging follower replica is behind its leader.",
                width=8,
            ),
            timeseries(
                "Offline replicas and reassignments",
                [
                    Query(_per_broker("kafka_server_replicamanager_offlinereplicacount"), "offline {{broker}}"),
                    Query(_per_broker("kafka_server_replicamanager_reassigningpartitions"), "reassigning {{broker}}"),
                    Query(_per_broker("kafka_log_logmanager_offlinelogdirectorycount"), "offline log dirs {{broker}}"),
                ],
                width=8,
            ),
        ],
    )


def resources() -> Row:
    return Row(
        "Broker JVM and OS",
        [
            timeseries(
                "Heap used",
                [Query(_per_broker("jvm_memory_used_bytes", f'{CB}, area="heap"'), "{{broker}}")],
                unit="bytes",
                width=8,
            ),
            timeseries(
                "GC time",
                [
                    Query(
                        f"sum by (broker, gc) (rate(jvm_gc_collection_seconds_sum{{{CB}}}{RATE}))", "{{broker}} {{gc}}"
                    )
                ],
                description="Seconds of GC per second; long old-generation pauses stall requests.",
                unit="percentunit",
                width=8,
            ),
            timeseries(
                "CPU",
                [Query(_rate_per_broker("process_cpu_seconds_total"), "{{broker}}")],
                description="CPU seconds per second of the broker JVM (1 = one core).",
                width=8,
            ),
            timeseries(
                "Open file descriptors",
                [
                    Query(
                        f"sum by (broker) (process_open_fds{{{CB}}}) / sum by (broker) (process_max_fds{{{CB}}})",
                        "{{broker}}",
                    )
                ],
                unit="percentunit",
                width=8,
            ),
            timeseries(
                "Threads",
                [Query(_per_broker("jvm_threads_current"), "{{broker}}")],
                width=8,
            ),
            timeseries(
                "Log flush p$quantile",
                [
                    Query(
                        _per_broker(
                            "kafka_log_logflushstats_logflushrateandtimems", f'{CB}, quantile="$quantile"', "max"
                        ),
                        "{{broker}}",
                    )
                ],
                description="fsync latency of log segments: slow disks show here first.",
                unit="ms",
                width=8,
            ),
        ],
    )


def collector() -> Row:
    return Row(
        "kafka-pulse collector",
        [
            timeseries(
                "JMX scrape duration",
                [Query(_per_broker("kafka_pulse_jmx_scrape_duration_seconds", how="max"), "{{broker}}")],
                unit="s",
                width=8,
            ),
            timeseries(
                "Since last successful JMX scrape",
                [
                    Query(
                        f"time() - max by (broker) (kafka_pulse_jmx_last_success_timestamp_seconds{{{CB}}})",
                        "{{broker}}",
                    )
                ],
                unit="s",
                width=8,
            ),
            timeseries(
                "JMX scrape failures",
                [
                    Query(
                        f"sum by (broker, reason) (increase(kafka_pulse_jmx_scrape_failures_total{{{CB}}}{RATE}))",
                        "{{broker}} {{reason}}",
                    )
                ],
                width=8,
                draw="bars",
            ),
        ],
    )


def overview() -> Json:
    variables = [
        query_variable("cluster", "Cluster", "label_values(kafka_pulse_cluster_state_up, cluster)"),
        query_variable(
            "broker",
            "Broker",
            'label_values(kafka_server_replicamanager_leadercount{cluster="$cluster"}, broker)',
            multi=True,
        ),
        custom_variable("quantile", "Quantile", QUANTILES, "0.99", "Yammer percentile of request and flush times"),
    ]
    rows = [
        health(),
        slow_brokers(),
        balance(),
        throughput(),
        requests(),
        conversions(),
        controller(),
        kraft_quorum(),
        replication(),
        resources(),
        collector(),
    ]
    return dashboard(
        UID,
        "Kafka cluster overview (kafka-pulse)",
        "Broker health, balance, throughput, requests, controller and replication of one cluster, from "
        "kafka-pulse's collectors (JMX with Strimzi's names, and cluster state from the Admin API).",
        variables,
        rows,
    )
