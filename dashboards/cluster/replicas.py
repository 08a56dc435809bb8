"""The cluster dashboard's rows on replicas: where partitions and leaders sit (the balance table) and how the
followers keep up (ISR changes, follower lag, offline replicas, reassignments)."""

from __future__ import annotations

from dashboards.cluster.queries import ALL_TOPICS, CB, per_broker, rate_per_broker
from dashboards.grafana import RATE, Query, Row, table, timeseries


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
                [Query(per_broker("kafka_server_replicamanager_partitioncount"), "{{broker}}")],
                width=8,
            ),
            timeseries(
                "Leaders per broker",
                [Query(per_broker("kafka_server_replicamanager_leadercount"), "{{broker}}")],
                width=8,
            ),
            timeseries(
                "Log size per broker",
                [Query(per_broker("kafka_log_log_size"), "{{broker}}")],
                description="Needs collectors.topic_metrics: partition.",
                unit="bytes",
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
                    Query(rate_per_broker("kafka_server_replicamanager_isrshrinks_total"), "shrink {{broker}}"),
                    Query(rate_per_broker("kafka_server_replicamanager_isrexpands_total"), "expand {{broker}}"),
                ],
                description="Steady shrinking and expanding (flapping) points at a slow follower or network.",
                width=8,
            ),
            timeseries(
                "Follower max lag",
                [
                    Query(
                        per_broker("kafka_server_replicafetchermanager_maxlag", f'{CB}, clientId="Replica"', "max"),
                        "{{broker}}",
                    )
                ],
                description="Messages the broker's most lagging follower replica is behind its leader.",
                width=8,
            ),
            timeseries(
                "Offline replicas and reassignments",
                [
                    Query(per_broker("kafka_server_replicamanager_offlinereplicacount"), "offline {{broker}}"),
                    Query(per_broker("kafka_server_replicamanager_reassigningpartitions"), "reassigning {{broker}}"),
                    Query(per_broker("kafka_log_logmanager_offlinelogdirectorycount"), "offline log dirs {{broker}}"),
                ],
                width=8,
            ),
        ],
    )
