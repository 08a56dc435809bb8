"""The cluster overview dashboard: the broker metrics of chapter 13 (collectors' JMX families, Strimzi names), the
balance table, offline / under-replicated / under-min-ISR partitions with the common-broker diagnosis (cluster state
from the Admin API), the controller and KRaft quorum, request latency percentiles and message conversions.
"""

from __future__ import annotations

from dashboards.cluster.controller import controller
from dashboards.cluster.health import health, slow_brokers
from dashboards.cluster.kraft import kraft_quorum
from dashboards.cluster.replicas import balance, replication
from dashboards.cluster.resources import collector, resources
from dashboards.cluster.traffic import conversions, requests, throughput
from dashboards.grafana import Json, custom_variable, query_variable
from dashboards.layout import dashboard

UID = "kafka-pulse-cluster"
QUANTILES = ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999")
"""The `quantile` label values of Yammer percentiles, spelled as the collectors (and Strimzi) spell them."""


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
