"""The cluster dashboard's first rows: health at a glance (brokers, controller, partitions, collector) and the
slow-broker detector's verdicts."""

from __future__ import annotations

from dashboards.cluster.queries import CB, C, per_broker
from dashboards.grafana import Query, Row, bad_above, good_above, stat, timeseries, value_mappings

UP = value_mappings({"1": ("up", "green"), "0": ("down", "red")})


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
                [Query(per_broker("kafka_pulse_broker_slow_score", how="max"), "{{broker}}")],
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
