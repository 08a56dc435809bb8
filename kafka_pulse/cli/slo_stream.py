"""`kafka-pulse slo stream`: the SLOs of the spec evaluated from SLI events on Kafka (slo/stream.py), each cycle
from minute buckets kept since the last one, instead of rescanning the window (docs/slo.md, "Streaming from Kafka").
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from devstack import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster

if TYPE_CHECKING:
    from pulse.config import PulseConfig
    from slo import Topic


def _topics(config: PulseConfig) -> dict[str, Topic]:
    """Source kind -> the SLI sink's topic holding its rows (`events`: the canary's, `lag`: lag groups', `audit`:
    the broker-side audit's)."""
    from audit import BROKER_STREAM
    from canary import CANARY_STREAM
    from lag import GROUPS_STREAM
    from slo import Topic

    prefix = config.sli_sink.topic_prefix
    return {
        kind: Topic(prefix + stream.name, stream.name, stream.version, stream.schema)
        for kind, stream in (("events", CANARY_STREAM), ("lag", GROUPS_STREAM), ("audit", BROKER_STREAM))
    }


@click.command()
@config_option
@click.option(
    "--state-dir",
    "state",
    type=click.Path(file_okay=False, path_type=Path),
    help="Checkpoint (`checkpoint/`) and bucket table (`buckets/`) here (default: <state dir>/slo-stream).",
)
@click.option("--watermark", default="2m", show_default=True, help="How late an event may arrive and still count.")
@click.option("--trigger", default="1m", show_default=True, help="Time between micro-batches and evaluations.")
@click.option("--once", is_flag=True, help="Read what the topics hold now, evaluate once at --at, and stop.")
@click.option("--at", "at_time", default=None, help="With --once: the evaluation time (ISO 8601; default now).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def stream(
    config_path: Path | None,
    state: Path | None,
    watermark: str,
    trigger: str,
    once: bool,
    at_time: str | None,
    as_json: bool,
) -> None:
    """Evaluate the SLOs continuously from the SLI sink's topics (Spark Structured Streaming)."""
    from kafka_pulse.cli.slo import _load, _print_results, parse_time
    from pulse.paths import cache_dir, state_dir
    from pulse.profile import client_config
    from slo import BucketStream, StreamSettings, package_settings, parse_duration_s, spark_kafka_options, spark_session

    try:
        watermark_s, trigger_s = parse_duration_s(watermark), parse_duration_s(trigger)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    slos, settings = _load(config_path)
    config = load_or_default(config_path, os.environ)
    cluster = resolve_cluster(config, config.sli_sink.cluster, dev_home())
    root = state if state is not None else state_dir() / "slo-stream"
    stream_settings = StreamSettings(
        kafka=spark_kafka_options(client_config(cluster)),
        checkpoint=root / "checkpoint",
        buckets=root / "buckets",
        watermark_s=watermark_s,
        trigger_s=float(trigger_s),
    )
    runner = BucketStream(slos, stream_settings)
    spark = spark_session(
        settings.spark_master, extra=package_settings(cache_dir()), driver_memory=settings.driver_memory
    )
    query = runner.start(spark, _topics(config), available_now=once)
    if once:
        query.awaitTermination()
        _print_results(runner.evaluate(parse_time(at_time, "--at")), as_json)
        return
    stopped = threading.Event()
    try:
        while not stopped.wait(trigger_s):
            if query.exception() is not None or not query.isActive:
                break
            _print_results(runner.evaluate(datetime.now(UTC)), as_json)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
    failure = query.exception()
    if failure is not None:
        raise click.ClickException(f"the stream stopped: {str(failure).splitlines()[0]}")
