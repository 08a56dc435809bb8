"""The cluster dashboard's KRaft quorum row: each voter's lag behind the leader and the leader's churn from the
collectors' DescribeQuorum (`kafka_pulse_kraft_*`), and each node's snapshot age and a pending KIP-853 voter change
from JMX. The thresholds are the health rules' (examples/prometheus-health/kafka-health.rules.yml)."""

from __future__ import annotations

from dashboards.cluster.queries import CB, C
from dashboards.grafana import Query, Row, bad_above, stat, timeseries, value_mappings

VOTER_LAGGING_S = 60
"""KafkaControllerVoterLagging's threshold."""
CHURN_PER_HOUR = 3
"""KafkaControllerLeaderChurn's threshold: elections within an hour."""
SNAPSHOT_STALE_MS = 3 * 3600 * 1000
"""KafkaMetadataSnapshotStale's threshold: three default `metadata.log.max.snapshot.interval.ms`."""


def kraft_quorum() -> Row:
    return Row(
        "KRaft quorum (DescribeQuorum)",
        [
            stat(
                "Quorum read",
                [Query(f"max(kafka_pulse_kraft_quorum_up{{{C}}})")],
                description="Whether the collectors' latest DescribeQuorum answered; the panels of this row read it.",
                mappings=value_mappings({"1": ("answered", "green"), "0": ("failed", "red")}),
            ),
            stat(
                "Leader epoch",
                [Query(f"max(kafka_pulse_kraft_leader_epoch{{{C}}})")],
                description="Every election raises it.",
            ),
            stat(
                "Leader elections (1 h)",
                [Query(f"max(changes(kafka_pulse_kraft_leader_epoch{{{C}}}[1h]))")],
                description=f"Elections within the last hour; {CHURN_PER_HOUR} or more opens a ticket "
                "(KafkaControllerLeaderChurn).",
                thresholds=bad_above(CHURN_PER_HOUR),
            ),
            stat(
                "Voters",
                [Query(f"max(kafka_pulse_kraft_voters{{{C}}})")],
                description="Voters of the metadata quorum, as DescribeQuorum lists them.",
            ),
            stat(
                "Pending voter change",
                [Query(f"max(kafka_server_raftmetrics_uncommitted_voter_change{{{C}}})")],
                description="KIP-853: 1 on the quorum leader while it holds an add or remove voter request open: "
                "until the change commits, or controller.quorum.request.timeout.ms (2 s by default) passes "
                "(KafkaControllerVoterChangePending after 5 m). A change stuck longer stops all commits "
                "(KafkaControllerQuorumNotCommitting).",
                mappings=value_mappings({"0": ("none", "green"), "1": ("pending", "orange")}),
            ),
            stat(
                "Observers",
                [Query(f"max(kafka_server_raftmetrics_number_of_observers{{{C}}})")],
                description="Replicas of the metadata log that are not voters (brokers), as the leader tracks them.",
            ),
            timeseries(
                "Voter last caught up",
                [Query(f"max by (node) (kafka_pulse_kraft_voter_caught_up_age_seconds{{{C}}})", "voter {{node}}")],
                description="Seconds since each voter last caught up with the leader; past "
                f"{VOTER_LAGGING_S} s for 5 m it is a ticket (KafkaControllerVoterLagging).",
                unit="s",
                thresholds=bad_above(VOTER_LAGGING_S),
                width=8,
            ),
            timeseries(
                "Voter lag (records)",
                [Query(f"max by (node) (kafka_pulse_kraft_voter_lag_records{{{C}}})", "voter {{node}}")],
                description="The leader's high watermark minus each voter's log end offset.",
                width=8,
            ),
            timeseries(
                "Metadata snapshot age",
                [
                    Query(
                        f"max by (broker) (kafka_server_snapshotemitter_latestsnapshotgeneratedagems{{{CB}}})",
                        "{{broker}}",
                    )
                ],
                description="Since each node wrote its latest metadata snapshot (since its start before the first); "
                "past 3 h for 15 m it is a ticket (KafkaMetadataSnapshotStale).",
                unit="ms",
                thresholds=bad_above(SNAPSHOT_STALE_MS),
                width=8,
            ),
        ],
    )
