"""The cluster dashboard's controller row (JMX): the active controller, the quorum's states and epochs, the event
queue, metadata lag and errors."""

from __future__ import annotations

from dashboards.cluster.queries import CB, C, per_broker
from dashboards.grafana import Query, Row, bad_above, table, timeseries


def controller() -> Row:
    return Row(
        "Controller and KRaft",
        [
            timeseries(
                "Active controller",
                [Query(per_broker("kafka_controller_kafkacontroller_activecontrollercount"), "{{broker}}")],
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
                        per_broker("kafka_controller_kafkacontroller_lastappliedrecordlagms", how="max"),
                        "controller {{broker}}",
                    ),
                    Query(
                        per_broker("kafka_server_brokermetadatametrics_last_applied_record_lag_ms", how="max"),
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
                [Query(per_broker("kafka_server_raftmetrics_commit_latency_avg", how="max"), "{{broker}}")],
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
