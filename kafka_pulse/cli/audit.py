"""`kafka-pulse audit reconcile`: the data-flow audit's reconciliation (docs/audit.md, "Reconciliation")
over the SLI sink's `audit-client` and `audit-broker` topics, outside `run`: each trigger prints the findings of the
minutes it judged; `--once` judges what the topics hold now and stops."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from devstack import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.cli.streaming_query import run_until_stopped
from kafka_pulse.clusters import load_or_default, resolve_cluster

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

    from audit import Finding


@click.group()
def audit() -> None:
    """The data-flow audit (docs/audit.md)."""


def _finding_json(f: Finding) -> dict[str, object]:
    minute = datetime.fromtimestamp(f.minute_ms / 1000, UTC).isoformat().replace("+00:00", "Z")
    return {
        "cluster": f.cluster,
        "topic": f.topic,
        "group": f.group or None,
        "minute": minute,
        "kind": f.kind,
        "count": f.count,
    }


def _print(found: Sequence[Finding], as_json: bool, minutes: int, late: int) -> None:
    from audit import describe

    if as_json:
        body = {"findings": [_finding_json(f) for f in found], "minutes_judged": minutes, "late_reports": late}
        click.echo(json.dumps(body, indent=2))
        return
    for f in found:
        click.echo(describe(f))
    click.echo(f"{minutes} minutes judged, {len(found)} findings, {late} late reports left out", err=True)


@audit.command()
@config_option
@click.option(
    "--state-dir",
    "state",
    type=click.Path(file_okay=False, path_type=Path),
    help="Checkpoint here (`checkpoint/`; default: <state dir>/audit-reconcile-cli).",
)
@click.option(
    "--deadline", default=None, help="Judge a minute this long after it (default audit.reconcile.deadline_s)."
)
@click.option("--once", is_flag=True, help="Judge what the topics hold now and stop.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def reconcile(config_path: Path | None, state: Path | None, deadline: str | None, once: bool, as_json: bool) -> None:
    """Reconcile producers', broker and groups' counts from the SLI sink's topics (Spark Structured Streaming)."""
    from audit import ReconcileStream
    from kafka_pulse.runner.audit_reconcile import audit_topics, reconcile_rows
    from kafka_pulse.runner.slo_stream import stream_settings
    from pulse.paths import cache_dir, state_dir
    from slo import dropped_as_late, package_settings, parse_duration_s, spark_session

    config = load_or_default(config_path, os.environ)
    settings_ = config.audit.reconcile
    try:
        deadline_s = parse_duration_s(deadline) if deadline is not None else settings_.deadline_s
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    cluster = resolve_cluster(config, config.sli_sink.cluster, dev_home())
    root = str(state if state is not None else state_dir() / "audit-reconcile-cli")
    settings = stream_settings(cluster, root, deadline_s, settings_.trigger_s)
    stream = ReconcileStream(
        int(deadline_s), settings.checkpoint, counted_groups=frozenset(settings_.counted_groups),
        trigger_s=settings_.trigger_s,
    )  # fmt: skip
    spark = spark_session(
        config.slo.spark_master, extra=package_settings(cache_dir()), driver_memory=config.slo.driver_memory
    )
    rows = reconcile_rows(spark, audit_topics(config), settings)
    seen, late, progress_seen = 0, 0, -1

    def report(query: StreamingQuery) -> None:
        nonlocal seen, late, progress_seen
        judged = stream.judged()
        dropped, progress_seen = dropped_as_late([json.loads(p.json) for p in query.recentProgress], progress_seen)
        late += dropped
        new = judged.recent[seen:] if len(judged.recent) >= seen else judged.recent
        seen = len(judged.recent)
        _print(new, as_json, judged.minutes, late)

    if once:
        query = stream.start(rows, available_now=True)
        query.awaitTermination()
        report(query)
        return
    run_until_stopped("audit reconcile", lambda: stream.start(rows), settings_.trigger_s, report)


if __name__ == "__main__":
    audit()
