"""`kafka-pulse slo stream`: the SLOs of the spec evaluated from SLI events on Kafka (slo/stream.py), each cycle
from minute buckets kept since the last one, instead of rescanning the window (docs/slo.md, "Streaming from Kafka").
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from devstack import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.cli.slo_steps import load_spec, parse_time, print_results
from kafka_pulse.cli.streaming_query import run_until_stopped
from kafka_pulse.clusters import load_or_default, resolve_cluster

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery


@click.command()
@config_option
@click.option(
    "--state-dir",
    "state",
    help="Checkpoint (`checkpoint/`) and bucket table (`buckets/`) here: a directory or a Hadoop filesystem URL "
    "(file:///..., hdfs://..., s3a://...) (default: slo.stream_dir, else <state dir>/slo-stream).",
)
@click.option("--watermark", default="2m", show_default=True, help="How late an event may arrive and still count.")
@click.option("--trigger", default="1m", show_default=True, help="Time between micro-batches and evaluations.")
@click.option("--once", is_flag=True, help="Read what the topics hold now, evaluate once at --at, and stop.")
@click.option("--at", "at_time", default=None, help="With --once: the evaluation time (ISO 8601; default now).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def stream(
    config_path: Path | None,
    state: str | None,
    watermark: str,
    trigger: str,
    once: bool,
    at_time: str | None,
    as_json: bool,
) -> None:
    """Evaluate the SLOs continuously from the SLI sink's topics (Spark Structured Streaming)."""
    from kafka_pulse.runner.slo_stream import sink_topics, stream_root, stream_settings
    from pulse.locations import check_location, shown
    from pulse.paths import cache_dir, state_dir
    from slo import BucketStream, package_settings, parse_duration_s, spark_session

    try:
        watermark_s, trigger_s = parse_duration_s(watermark), parse_duration_s(trigger)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    try:
        chosen = check_location(state) if state is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--state-dir") from None
    slos, settings = load_spec(config_path, streamed=True)
    config = load_or_default(config_path, os.environ)
    cluster = resolve_cluster(config, config.sli_sink.cluster, dev_home())
    root = chosen if chosen is not None else stream_root(settings.stream_dir, state_dir())
    click.echo(f"slo stream: checkpoint and bucket table under {shown(root)}", err=True)
    runner = BucketStream(slos, stream_settings(cluster, root, watermark_s, trigger_s))
    spark = spark_session(
        settings.spark_master, extra=package_settings(cache_dir()), driver_memory=settings.driver_memory
    )

    def report_late(query: StreamingQuery) -> None:
        if runner.count_late(query):
            click.echo(f"slo stream: events later than the watermark ({watermark}), not counted since the start: "
                       f"{runner.late_dropped}", err=True)  # fmt: skip

    if once:
        query = runner.start(spark, sink_topics(config), available_now=True)
        query.awaitTermination()
        report_late(query)
        print_results(runner.evaluate(parse_time(at_time, "--at")), as_json)
        return

    def report(query: StreamingQuery) -> None:
        report_late(query)
        print_results(runner.evaluate(datetime.now(UTC)), as_json)

    run_until_stopped("slo stream", lambda: runner.start(spark, sink_topics(config)), trigger_s, report)
