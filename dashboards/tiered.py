"""The tiered-storage dashboard (KIP-405/963): copy lag against each topic's allowance, copy and remote-fetch error
ratios, the remote reader pool, remote size and delete lag, and the groups reading the remote tier. Its cluster
variable lists only clusters with a tiered topic. The thresholds are the rules'
(examples/prometheus-health/tiered-storage.rules.yml)."""

from __future__ import annotations

from dashboards.grafana import RATE, Json, Query, Row, bad_above, query_variable, stat, table, timeseries
from dashboards.layout import dashboard

UID = "kafka-pulse-tiered"
C = 'cluster="$cluster"'
ALL_TOPICS = 'cluster="$cluster", broker=~"$broker", topic=""'
"""The broker-wide series: no `topic` label, which `topic=""` selects."""
PER_TOPIC = 'cluster="$cluster", topic!=""'
ERROR_RATIO = 0.05
"""KafkaRemoteCopyErrors' and KafkaRemoteFetchErrors' threshold."""
READER_IDLE = 0.1
"""KafkaRemoteReaderSaturated's idle threshold."""
BELOW_LOCAL = (
    f"burrow_kafka_consumer_current_offset{{{C}}} < on (cluster, topic, partition) group_left "
    f"kafka_pulse_cluster_partition_earliest_local_offset{{{C}}}"
)
"""Each group's partitions committed below the earliest local offset: the recording rule
`kafka_pulse:consumer_group_remote_tier_partitions`, inline so the dashboard needs no rules file."""


def _ratio(errors: str, requests: str) -> str:
    return f"sum(rate({errors}{{{ALL_TOPICS}}}{RATE})) / sum(rate({requests}{{{ALL_TOPICS}}}{RATE}))"


def tiered_storage() -> Row:
    return Row(
        "Tiered storage (KIP-405)",
        [
            stat(
                "Tiered topics",
                [Query(f"count(kafka_pulse_cluster_topic_remote_copy_lag_allowed_bytes{{{C}}})")],
                description="Topics with remote.storage.enable=true whose copy lag something bounds.",
            ),
            stat(
                "Groups on the remote tier",
                [Query(f"count(count by (consumer_group) ({BELOW_LOCAL})) or vector(0)")],
                description="Consumer groups with a partition committed below its earliest local offset.",
            ),
            stat(
                "Remote log size",
                [Query(f"sum(kafka_server_brokertopicmetrics_remotelogsizebytes{{{ALL_TOPICS}}})")],
                description="Bytes in remote storage of the partitions the brokers lead.",
                unit="bytes",
            ),
            stat(
                "Copy errors",
                [
                    Query(
                        _ratio(
                            "kafka_server_brokertopicmetrics_remotecopyerrors_total",
                            "kafka_server_brokertopicmetrics_remotecopyrequests_total",
                        )
                    )
                ],
                description=f"Share of segment copies that fail; above {ERROR_RATIO:.0%} for 15 m it is a ticket "
                "(KafkaRemoteCopyErrors).",
                unit="percentunit",
                thresholds=bad_above(ERROR_RATIO),
            ),
            stat(
                "Remote fetch errors",
                [
                    Query(
                        _ratio(
                            "kafka_server_brokertopicmetrics_remotefetcherrors_total",
                            "kafka_server_brokertopicmetrics_remotefetchrequests_total",
                        )
                    )
                ],
                description=f"Share of fetches from remote storage that fail; above {ERROR_RATIO:.0%} for 10 m it "
                "is a ticket (KafkaRemoteFetchErrors).",
                unit="percentunit",
                thresholds=bad_above(ERROR_RATIO),
            ),
            stat(
                "Remote reader queue",
                [Query(f"max(kafka_log_remote_remotestoragethreadpool_remotelogreadertaskqueuesize{{{C}}})")],
                description="Most remote fetches waiting for a reader thread on one broker.",
            ),
            timeseries(
                "Copy lag vs allowance per topic",
                [
                    Query(
                        f"sum by (topic) (kafka_server_brokertopicmetrics_remotecopylagbytes{{{PER_TOPIC}}})",
                        "lag {{topic}}",
                    ),
                    Query(
                        f"sum by (topic) (kafka_pulse_cluster_topic_remote_copy_lag_allowed_bytes{{{C}}})",
                        "allowance {{topic}}",
                    ),
                ],
                description="Bytes not yet copied to remote storage (needs collectors.topic_metrics) against the "
                "topic's allowance: its remote.copy.lag.bytes (4.4+) or local.retention.bytes, plus one segment. "
                "Above it for 15 m is a ticket (KafkaRemoteCopyLagAboveAllowance).",
                unit="bytes",
            ),
            timeseries(
                "Copy and delete lag per broker",
                [
                    Query(
                        f"sum by (broker) (kafka_server_brokertopicmetrics_remotecopylagbytes{{{ALL_TOPICS}}})",
                        "copy {{broker}}",
                    ),
                    Query(
                        f"sum by (broker) (kafka_server_brokertopicmetrics_remotedeletelagbytes{{{ALL_TOPICS}}})",
                        "delete {{broker}}",
                    ),
                ],
                description="Bytes each broker has not copied yet, and remote bytes past retention not deleted yet "
                "(a delete lag that keeps growing is a storage-cost leak).",
                unit="bytes",
            ),
            timeseries(
                "Remote copy and fetch bytes",
                [
                    Query(
                        f"sum(rate(kafka_server_brokertopicmetrics_remotecopybytes_total{{{ALL_TOPICS}}}{RATE}))",
                        "copied",
                    ),
                    Query(
                        f"sum(rate(kafka_server_brokertopicmetrics_remotefetchbytes_total{{{ALL_TOPICS}}}{RATE}))",
                        "fetched",
                    ),
                ],
                description="Bytes per second copied to and read from remote storage.",
                unit="Bps",
            ),
            timeseries(
                "Remote reader idle",
                [
                    Query(
                        "min by (broker) (kafka_log_remote_remotestoragethreadpool_remotelogreaderavgidle_percent"
                        f"{{{C}}})",
                        "{{broker}}",
                    )
                ],
                description=f"Share of time the remote log readers are idle; under {READER_IDLE:.0%} with fetches "
                "queued for 15 m is a ticket (KafkaRemoteReaderSaturated).",
                unit="percentunit",
                minimum=0,
                maximum=1,
            ),
            table(
                "Groups reading the remote tier",
                [
                    Query(f"count by (consumer_group, topic) ({BELOW_LOCAL})"),
                    Query(
                        f"max by (consumer_group, topic) (kafka_pulse_cluster_partition_earliest_local_offset{{{C}}}"
                        f" - on (cluster, topic, partition) group_right burrow_kafka_consumer_current_offset{{{C}}})"
                        " > 0"
                    ),
                ],
                columns={
                    "consumer_group": "Group",
                    "topic": "Topic",
                    "Value #A": "Partitions",
                    "Value #B": "Most records before local data",
                },
                description="Partitions each group committed below the partition's earliest local offset: its reads "
                "are served from remote storage (KafkaConsumerGroupReadingRemoteTier after 10 m).",
                width=24,
            ),
        ],
    )


def tiered() -> Json:
    variables = [
        query_variable(
            "cluster", "Cluster", "label_values(kafka_pulse_cluster_topic_remote_copy_lag_allowed_bytes, cluster)"
        ),
        query_variable(
            "broker",
            "Broker",
            'label_values(kafka_server_brokertopicmetrics_remotelogsizebytes{cluster="$cluster"}, broker)',
            multi=True,
        ),
    ]
    return dashboard(
        UID,
        "Kafka tiered storage (kafka-pulse)",
        "Remote storage (KIP-405) as the brokers report it and kafka-pulse judges it: copy lag against each topic's "
        "allowance, copy and fetch errors, the remote readers, and the consumer groups reading the remote tier.",
        variables,
        [tiered_storage()],
    )
