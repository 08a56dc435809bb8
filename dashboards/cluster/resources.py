"""The cluster dashboard's last rows: each broker's JVM and OS (heap, GC, CPU, files, threads, log flush) and
kafka-pulse's own JMX scrapes."""

from __future__ import annotations

from dashboards.cluster.queries import CB, per_broker, rate_per_broker
from dashboards.grafana import RATE, Query, Row, timeseries


def resources() -> Row:
    return Row(
        "Broker JVM and OS",
        [
            timeseries(
                "Heap used",
                [Query(per_broker("jvm_memory_used_bytes", f'{CB}, area="heap"'), "{{broker}}")],
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
                [Query(rate_per_broker("process_cpu_seconds_total"), "{{broker}}")],
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
                [Query(per_broker("jvm_threads_current"), "{{broker}}")],
                width=8,
            ),
            timeseries(
                "Log flush p$quantile",
                [
                    Query(
                        per_broker(
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
                [Query(per_broker("kafka_pulse_jmx_scrape_duration_seconds", how="max"), "{{broker}}")],
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
