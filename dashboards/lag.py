"""The consumer lag dashboard: group statuses as the evaluator judges them (Burrow's names), lag in records and in
seconds (kafka-lag-exporter's names), the worst groups, and the reasons: which partitions are STOP, STALL or REWIND,
exact time lag and reads beyond the page cache (docs/metrics.md, "Lag evaluator"; lag/serve/metrics.py).
"""

from __future__ import annotations

from dashboards.grafana import (
    RATE,
    Json,
    Query,
    Row,
    bad_above,
    good_above,
    query_variable,
    stat,
    table,
    timeseries,
    value_mappings,
)
from dashboards.layout import dashboard

UID = "kafka-pulse-lag"
G = 'cluster="$cluster", consumer_group=~"$group"'
"""Burrow's families: `cluster`, `consumer_group`."""
K = 'cluster_name="$cluster", group=~"$group"'
"""kafka-lag-exporter's families: `cluster_name`, `group`."""
GROUP_STATUS = value_mappings(
    {
        "-1": ("UNKNOWN", "purple"),
        "0": ("NOTFOUND", "blue"),
        "1": ("OK", "green"),
        "2": ("WARN", "orange"),
        "3": ("ERR", "red"),
    }
)
PARTITION_STATUS = value_mappings(
    {"1": ("OK", "green"), "2": ("WARN", "orange"), "4": ("STOP", "red"), "5": ("STALL", "red"), "6": ("REWIND", "red")}
)


def _as_consumer_group(expr: str) -> str:
    """kafka-lag-exporter's `group` label copied to `consumer_group`, so its families join Burrow's in a table."""
    return f'label_replace({expr}, "consumer_group", "$1", "group", "(.*)")'


def _count_status(condition: str) -> str:
    return f"count(burrow_kafka_consumer_status{{{G}}} {condition}) or vector(0)"


def statuses() -> Row:
    return Row(
        "Group status",
        [
            stat("Groups OK", [Query(_count_status("== 1"))], thresholds=((None, "green"),)),
            stat(
                "Groups WARN",
                [Query(_count_status("== 2"))],
                thresholds=bad_above(1, "orange"),
                description="Lag growing while the group commits: it falls behind.",
            ),
            stat(
                "Groups ERR",
                [Query(_count_status("== 3"))],
                thresholds=bad_above(1),
                description="A partition is STOP (no commits), STALL (commits, no progress) or REWIND.",
            ),
            stat(
                "Groups UNKNOWN",
                [Query(_count_status("== -1"))],
                thresholds=bad_above(1, "purple"),
                description="The cluster's offsets are stale (source unreachable): no verdict, never a false OK.",
            ),
            stat(
                "Offsets source",
                [Query('kafka_pulse_lag_source_up{cluster="$cluster"}')],
                description="1 while every feed of the cluster is fresh and its groups are judged.",
                mappings=value_mappings({"1": ("fresh", "green"), "0": ("stale", "red")}),
                thresholds=good_above(1),
            ),
            stat(
                "Worst group lag",
                [Query(f"max(kafka_consumergroup_group_max_lag_seconds{{{K}}})")],
                description="Largest partition lag in seconds among the selected groups (interpolated from the "
                "high-water-mark history).",
                unit="s",
                thresholds=((None, "green"), (60, "orange"), (300, "red")),
            ),
            table(
                "Groups",
                [
                    Query(f"max by (consumer_group) (burrow_kafka_consumer_status{{{G}}})"),
                    Query(f"max by (consumer_group) (burrow_kafka_consumer_lag_total{{{G}}})"),
                    Query(_as_consumer_group(f"max by (group) (kafka_consumergroup_group_max_lag{{{K}}})")),
                    Query(_as_consumer_group(f"max by (group) (kafka_consumergroup_group_max_lag_seconds{{{K}}})")),
                ],
                columns={
                    "consumer_group": "Group",
                    "Value #A": "Status",
                    "Value #B": "Total lag",
                    "Value #C": "Max partition lag",
                    "Value #D": "Max lag (s)",
                },
                units={"Max lag (s)": "s"},
                mappings={"Status": GROUP_STATUS},
                description="Burrow's group status (worst partition; STOP, STALL and REWIND show as ERR) with its "
                "lag in records and seconds.",
                width=24,
                sort_by="Status",
            ),
        ],
    )


def lag_over_time() -> Row:
    return Row(
        "Lag",
        [
            timeseries(
                "Lag (records)",
                [Query(f"sum by (consumer_group) (burrow_kafka_consumer_lag_total{{{G}}})", "{{consumer_group}}")],
                description="Burrow's totallag: records between each partition's committed offset and its HWM.",
            ),
            timeseries(
                "Lag (seconds)",
                [Query(f"max by (group) (kafka_consumergroup_group_max_lag_seconds{{{K}}})", "{{group}}")],
                description="How old the oldest unconsumed record of the group is, interpolated from the partition's "
                "HWM history: comparable across topics of any traffic.",
                unit="s",
            ),
            timeseries(
                "Exact lag (seconds)",
                [Query(f"max by (consumer_group) (kafka_pulse_lag_max_exact_seconds{{{G}}})", "{{consumer_group}}")],
                description="Age of the record at the committed offset, read from Kafka (lag.exact_time_lag).",
                unit="s",
            ),
            timeseries(
                "Worst groups (seconds)",
                [
                    Query(
                        'topk(10, max by (group) (kafka_consumergroup_group_max_lag_seconds{cluster_name="$cluster"}))',
                        "{{group}}",
                    )
                ],
                description="The ten groups furthest behind in time, whatever the group selection.",
                unit="s",
            ),
            table(
                "Worst groups now",
                [
                    Query(
                        _as_consumer_group(
                            "topk(10, max by (group) (kafka_consumergroup_group_max_lag_seconds"
                            '{cluster_name="$cluster"}))'
                        )
                    ),
                    Query('max by (consumer_group) (burrow_kafka_consumer_lag_total{cluster="$cluster"})'),
                    Query('max by (consumer_group) (burrow_kafka_consumer_status{cluster="$cluster"})'),
                ],
                columns={
                    "consumer_group": "Group",
                    "Value #A": "Max lag (s)",
                    "Value #B": "Total lag",
                    "Value #C": "Status",
                },
                units={"Max lag (s)": "s"},
                mappings={"Status": GROUP_STATUS},
                sort_by="Max lag (s)",
            ),
            timeseries(
                "Lag per partition (records)",
                [
                    Query(
                        f"sum by (consumer_group, topic, partition) (burrow_kafka_consumer_partition_lag{{{G}}})",
                        "{{consumer_group}} {{topic}}/{{partition}}",
                    )
                ],
            ),
        ],
    )


def reasons() -> Row:
    return Row(
        "Why",
        [
            table(
                "Partitions not OK",
                [
                    Query(
                        f"max by (consumer_group, topic, partition) (burrow_kafka_topic_partition_status{{{G}}}) > 1"
                    ),
                    Query(f"max by (consumer_group, topic, partition) (burrow_kafka_consumer_partition_lag{{{G}}})"),
                ],
                columns={
                    "consumer_group": "Group",
                    "topic": "Topic",
                    "partition": "Partition",
                    "Value #A": "Status",
                    "Value #B": "Lag",
                },
                mappings={"Status": PARTITION_STATUS},
                description="The partitions that make a group WARN or ERR: STOP (no commit for longer than the "
                "window spans), STALL (commits without progress), REWIND (an offset went back), WARN (lag growing). "
                "The rule that fired and its text are in the lag API: /v3/kafka/<cluster>/consumer/<group>/lag.",
                sort_by="Status",
            ),
            timeseries(
                "Reads beyond the page cache",
                [Query(f"max by (consumer_group) (kafka_pulse_lag_beyond_page_cache{{{G}}})", "{{consumer_group}}")],
                description="1 when a partition's time lag exceeds what its leader's page cache holds: the group "
                "reads from disk and slows every producer on that broker (lag.page_cache).",
                draw="bars",
                maximum=1,
            ),
            timeseries(
                "Page-cache window per broker",
                [Query('kafka_pulse_lag_page_cache_window_seconds{cluster="$cluster"}', "{{broker}}")],
                description="Seconds of recent writes each broker's page cache holds (lag.page_cache.size_bytes).",
                unit="s",
            ),
            timeseries(
                "Offsets ingested",
                [
                    Query(f"sum by (result) (rate(kafka_pulse_lag_commits_total{RATE}))", "commits {{result}}"),
                    Query(
                        f'sum by (kind) (rate(kafka_pulse_lag_offsets_records_total{{cluster="$cluster"}}{RATE}))',
                        "__consumer_offsets {{kind}}",
                    ),
                ],
                description="What the evaluator reads: commits by fate, and __consumer_offsets records by kind "
                "(Undecodable ones are counted and skipped).",
            ),
        ],
    )


def lag() -> Json:
    variables = [
        query_variable("cluster", "Cluster", "label_values(burrow_kafka_consumer_status, cluster)"),
        query_variable(
            "group",
            "Consumer group",
            'label_values(burrow_kafka_consumer_status{cluster="$cluster"}, consumer_group)',
            multi=True,
        ),
    ]
    return dashboard(
        UID,
        "Kafka consumer lag (kafka-pulse)",
        "Consumer groups as kafka-pulse's lag evaluator judges them (Burrow's statuses, time lag, the reasons).",
        variables,
        [statuses(), lag_over_time(), reasons()],
    )
