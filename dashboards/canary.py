"""The canary dashboard: produce availability per broker and per AZ (same-AZ against cross-AZ, from the probes'
`client_rack` and leader `rack` labels), latency heatmaps from the histogram buckets, loss and duplicates, and the
mirror canary's replication latency (docs/metrics.md, "Canary" and "Canary mirror").
"""

from __future__ import annotations

from dashboards.grafana import (
    RATE,
    Json,
    Query,
    Row,
    bad_above,
    bargauge,
    custom_variable,
    good_above,
    heatmap,
    query_variable,
    stat,
    timeseries,
)
from dashboards.layout import dashboard

UID = "kafka-pulse-canary"
M = "kafka_pulse_canary"
C = 'cluster="$cluster"'
P = 'cluster="$cluster", broker=~"$broker"'
SAME_AZ = 'cluster="$cluster", client_rack="$client_rack", rack="$client_rack"'
CROSS_AZ = 'cluster="$cluster", client_rack="$client_rack", rack!="$client_rack"'
MIRROR = 'source_cluster="$cluster"'
QUANTILES = ("0.5", "0.9", "0.95", "0.99", "0.999")


def _rate(metric: str, selector: str, by: str, window: str = RATE) -> str:
    return f"sum by ({by}) (rate({metric}{{{selector}}}{window}))"


def _increase_or_zero(metric: str, selector: str, by: str, basis: str, window: str = RATE) -> str:
    """`increase` per `by`, with 0 where the counter has no series yet (its labels appear with the first event)
    but the `basis` counter does: "0 lost" rather than no data."""
    return (
        f"sum by ({by}) (increase({metric}{{{selector}}}{window})) or "
        f"sum by ({by}) (increase({basis}{{{selector}}}{window})) * 0"
    )


def _success_ratio(selector: str, by: str) -> str:
    """Settled probes whose produce succeeded, over all settled probes."""
    attempts, errors = f"{M}_produce_attempts_total", f"{M}_produce_errors_total"
    failed = _rate(errors, selector, by) + " or " + _rate(attempts, selector, by) + " * 0"
    return f"({_rate(attempts, selector, by)} - ({failed})) / {_rate(attempts, selector, by)}"


def _quantile(metric: str, selector: str, by: str) -> str:
    keep = f"{by}, le" if by else "le"
    return f"histogram_quantile($quantile, sum by ({keep}) (rate({metric}_bucket{{{selector}}}{RATE})))"


def availability() -> Row:
    return Row(
        "Availability",
        [
            stat(
                "Worst broker availability",
                [Query(f"min({M}_produce_availability{{{P}}})")],
                description="Good over judged probes charged to each broker in canary.availability_window_s; a bad "
                "probe counts against the in-sync follower that made acks=all wait, not the healthy leader.",
                unit="percentunit",
                decimals=3,
                thresholds=good_above(0.999),
            ),
            stat(
                "Brokers answering",
                [Query(f"sum({M}_broker_up{{{P}}})", "up"), Query(f"count({M}_broker_up{{{P}}})", "checked")],
                description="Brokers whose last ApiVersions check on the canary's own connection answered.",
                text_mode="value_and_name",
            ),
            stat(
                "Probes pending",
                [Query(f"{M}_probes_pending{{{C}}}")],
                description="Sent and not settled yet; a growing number means probes hang.",
            ),
            stat(
                "Lost (range)",
                [Query(f"sum(increase({M}_records_lost_total{{{P}}}[$__range])) or vector(0)")],
                description="Acknowledged probes never read back within canary.loss_deadline_s.",
                thresholds=bad_above(1),
                decimals=0,
            ),
            stat(
                "Duplicated (range)",
                [Query(f"sum(increase({M}_records_duplicated_total{{{P}}}[$__range])) or vector(0)")],
                thresholds=bad_above(1, "orange"),
                decimals=0,
            ),
            stat(
                "Same-AZ / cross-AZ success",
                [
                    Query(_success_ratio(SAME_AZ, "cluster"), "same AZ"),
                    Query(_success_ratio(CROSS_AZ, "cluster"), "cross AZ"),
                ],
                description="Produce success of probes whose leader is in the canary's own AZ ($client_rack) "
                "against those crossing AZs.",
                unit="percentunit",
                decimals=3,
                thresholds=good_above(0.999),
                text_mode="value_and_name",
            ),
            bargauge(
                "Availability now",
                [Query(f"{M}_produce_availability{{{P}}}", "broker {{broker}} ({{rack}})")],
                unit="percentunit",
                thresholds=((None, "red"), (0.99, "orange"), (0.999, "green")),
                minimum=0.9,
                maximum=1,
                width=8,
            ),
            timeseries(
                "Availability per broker",
                [Query(f"{M}_produce_availability{{{P}}}", "{{broker}} ({{rack}})")],
                unit="percentunit",
                maximum=1,
                width=16,
            ),
            timeseries(
                "Produce success per AZ pair",
                [Query(_success_ratio(C, "client_rack, rack"), "{{client_rack}} -> {{rack}}")],
                description="From the canary's AZ (client_rack) to the leader's AZ (rack): an AZ that fails only "
                "cross-AZ traffic points at the network between AZs rather than at brokers.",
                unit="percentunit",
            ),
            timeseries(
                "Produce errors by code",
                [
                    Query(
                        f"{_rate(M + '_produce_errors_total', P, 'error')} or on () "
                        f"label_replace({_rate(M + '_produce_attempts_total', P, 'cluster')} * 0, "
                        '"error", "none", "", "")',
                        "{{error}}",
                    )
                ],
                description="librdkafka's error names: _MSG_TIMED_OUT (not acknowledged within latency_slo_s), "
                "NOT_ENOUGH_REPLICAS (ISR below min.insync.replicas), ...; 'none' while there are none.",
                draw="bars",
            ),
        ],
    )


def latency() -> Row:
    leader = f'{P}, replica="leader"'
    return Row(
        "Latency",
        [
            heatmap(
                "Produce latency (acks=all)",
                f"sum by (le) (increase({M}_produce_latency_seconds_bucket{{{P}}}{RATE}))",
                description="produce() to the acks=all acknowledgement, all selected brokers.",
            ),
            heatmap(
                "End-to-end latency",
                f"sum by (le) (increase({M}_e2e_latency_seconds_bucket{{{leader}}}{RATE}))",
                description="Send to read back from the leader.",
            ),
            timeseries(
                "Produce latency p$quantile per broker",
                [Query(_quantile(f"{M}_produce_latency_seconds", P, "broker"), "{{broker}}")],
                unit="s",
                width=8,
            ),
            timeseries(
                "End-to-end latency p$quantile per broker",
                [Query(_quantile(f"{M}_e2e_latency_seconds", leader, "broker"), "{{broker}}")],
                unit="s",
                width=8,
            ),
            timeseries(
                "Same-AZ vs cross-AZ end-to-end p$quantile",
                [
                    Query(_quantile(f"{M}_e2e_latency_seconds", SAME_AZ + ', replica="leader"', ""), "same AZ"),
                    Query(_quantile(f"{M}_e2e_latency_seconds", CROSS_AZ + ', replica="leader"', ""), "cross AZ"),
                ],
                description="Probes whose leader is in the canary's AZ ($client_rack) against the others: the cost "
                "of crossing AZs, and an AZ-local problem when only one of them moves.",
                unit="s",
                width=8,
            ),
            timeseries(
                "Broker connection check p$quantile",
                [Query(_quantile(f"{M}_connection_check_seconds", P, "broker"), "{{broker}}")],
                description="Connect and ApiVersions on the canary's own connection to each broker.",
                unit="s",
                width=8,
            ),
            timeseries(
                "Offset commit p$quantile",
                [Query(_quantile(f"{M}_offset_commit_latency_seconds", C, ""), "commit")],
                description="The probe group's synchronous commit: the group coordinator's health.",
                unit="s",
                width=8,
            ),
            timeseries(
                "Probes per second",
                [
                    Query(_rate(f"{M}_produce_attempts_total", P, "broker"), "sent {{broker}}"),
                    Query(_rate(f"{M}_records_consumed_total", P, "broker"), "read back {{broker}}"),
                ],
                width=8,
            ),
        ],
    )


def integrity() -> Row:
    attempts = f"{M}_produce_attempts_total"
    return Row(
        "Loss, duplicates, order",
        [
            timeseries(
                "Lost",
                [Query(_increase_or_zero(f"{M}_records_lost_total", P, "broker", attempts), "{{broker}}")],
                description="Acknowledged probes not read back within the loss deadline, by leader at send time.",
                draw="bars",
                thresholds=bad_above(1),
                width=8,
            ),
            timeseries(
                "Duplicated",
                [Query(_increase_or_zero(f"{M}_records_duplicated_total", P, "broker", attempts), "{{broker}}")],
                description="Extra reads of a probe already read (idempotence broken, consumer rewind).",
                draw="bars",
                width=8,
            ),
            timeseries(
                "Out of order",
                [Query(_increase_or_zero(f"{M}_records_out_of_order_total", P, "broker", attempts), "{{broker}}")],
                draw="bars",
                width=8,
            ),
            timeseries(
                "Truncations and late reads",
                [
                    Query(f"sum(increase({M}_truncations_total{{{C}}}{RATE})) or vector(0)", "truncations"),
                    Query(f"sum(increase({M}_records_late_total{{{C}}}{RATE})) or vector(0)", "late"),
                ],
                description="A partition log found shorter than an acknowledged offset (unclean election, lost "
                "data); probes read after they were declared lost.",
                draw="bars",
                width=8,
            ),
            timeseries(
                "Connection checks",
                [Query(_rate(f"{M}_connection_checks_total", P, "broker, result"), "{{broker}} {{result}}")],
                width=8,
            ),
            timeseries(
                "Monitor topic",
                [
                    Query(f"sum by (broker) ({M}_partitions_led{{{P}}})", "led by {{broker}}"),
                    Query(f"{M}_topic_placement_gaps{{{C}}}", "placement gaps"),
                ],
                description="Every broker must lead a monitor partition to be probed as a leader; gaps are ways the "
                "topic differs from its plan.",
                width=8,
            ),
        ],
    )


def mirror() -> Row:
    produced = "kafka_pulse_canary_mirror_produced_total"
    pipeline = "source_cluster, target_cluster"
    return Row(
        "Mirror (MirrorMaker)",
        [
            heatmap(
                "Replication latency",
                f"sum by (le) (increase(kafka_pulse_canary_mirror_replication_latency_seconds_bucket{{{MIRROR}}}"
                f"{RATE}))",
                description="Probe sent on the source ($cluster) to its copy read on the target: the mirror's "
                "whole path, end to end.",
                width=8,
            ),
            timeseries(
                "Replication latency p$quantile",
                [
                    Query(
                        _quantile("kafka_pulse_canary_mirror_replication_latency_seconds", MIRROR, pipeline),
                        "{{source_cluster}} -> {{target_cluster}}",
                    )
                ],
                unit="s",
                width=8,
            ),
            timeseries(
                "Mirror lag",
                [
                    Query(
                        f"max by ({pipeline}) (kafka_pulse_canary_mirror_lag_seconds{{{MIRROR}}})",
                        "{{source_cluster}} -> {{target_cluster}}",
                    )
                ],
                description="Age of the oldest acknowledged probe not yet read on the target; grows without bound "
                "while the mirror is stalled.",
                unit="s",
                width=8,
            ),
            timeseries(
                "Mirrored, lost, duplicated",
                [
                    Query(
                        _increase_or_zero("kafka_pulse_canary_mirror_mirrored_total", MIRROR, pipeline, produced),
                        "mirrored -> {{target_cluster}}",
                    ),
                    Query(
                        _increase_or_zero("kafka_pulse_canary_mirror_lost_total", MIRROR, pipeline, produced),
                        "lost -> {{target_cluster}}",
                    ),
                    Query(
                        _increase_or_zero("kafka_pulse_canary_mirror_duplicated_total", MIRROR, pipeline, produced),
                        "duplicated -> {{target_cluster}}",
                    ),
                ],
                description="Lost: not read on the target within canary.mirror.loss_deadline_s. MirrorMaker 2 is "
                "at-least-once: duplicates follow its restarts.",
                draw="bars",
                width=12,
            ),
            timeseries(
                "MirrorMaker 2's own view",
                [
                    Query(
                        f"max by (client_target) (kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max"
                        f"{{{C}}})",
                        "replication latency max {{client_target}}",
                    ),
                    Query(
                        f"max by (client_target) (kafka_connect_mirror_mirrorsourceconnector_record_age_ms_max{{{C}}})",
                        "record age max {{client_target}}",
                    ),
                ],
                description="From MirrorMaker 2's JMX (collectors.clients with cluster: $cluster, the source): "
                "record timestamp to write on the target, and age when read.",
                unit="ms",
                width=12,
            ),
        ],
    )


def canary() -> Json:
    variables = [
        query_variable("cluster", "Cluster", f"label_values({M}_topic_partitions, cluster)"),
        query_variable("broker", "Broker", f'label_values({M}_broker_up{{cluster="$cluster"}}, broker)', multi=True),
        query_variable(
            "client_rack",
            "Canary AZ",
            f'label_values({M}_produce_attempts_total{{cluster="$cluster"}}, client_rack)',
            description="The canary's own rack (canary.client_rack): same-AZ probes have rack = client_rack.",
        ),
        custom_variable("quantile", "Quantile", QUANTILES, "0.99", "Latency quantile from the histogram buckets"),
    ]
    return dashboard(
        UID,
        "Kafka canary (kafka-pulse)",
        "Kafka as its clients see it: kafka-pulse's synthetic probes through every broker, per AZ, with latency, "
        "loss and duplicates, and the mirror canary across clusters.",
        variables,
        [availability(), latency(), integrity(), mirror()],
    )
