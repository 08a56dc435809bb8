"""`kafka-pulse slo evaluate|backtest|report`: load and validate the SLO spec, then (and only then) start Spark and run
the burn-rate job; `slo rules`: the equivalent Prometheus rules and their promtool tests (slo/rules.py), no Spark.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from kafka_pulse.cli.options import config_option
from kafka_pulse.cli.slo_steps import load_spec, parse_time, print_results
from kafka_pulse.cli.slo_stream import stream
from kafka_pulse.clusters import load_or_default

if TYPE_CHECKING:
    import pyarrow as pa

    from pulse.config import SloConfig
    from slo import BacktestResult, InstanceMinutes, Slo, SloResult


T = TypeVar("T")


def _bucket_table(location: str, settings: SloConfig, use: Callable[[pa.Table], T]) -> T:
    """`use` applied to the stream's bucket table at `location`: a local directory, read without Spark, or a URL
    as `slo stream --state-dir` takes (`file://`, `hdfs://`, `s3a://`...), read through Spark (`slo.spark_master`).
    A missing table or a refused URL is a usage error."""
    from pulse.locations import check_location, local_path
    from slo import BucketTable, spark_session

    try:
        where = check_location(location)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--buckets") from None
    spark = None
    if local_path(where) is None:
        spark = spark_session(settings.spark_master, driver_memory=settings.driver_memory)
    try:
        table = BucketTable(where).read(spark, missing_ok=False)
    except FileNotFoundError as exc:
        raise click.BadParameter(str(exc), param_hint="--buckets") from None
    return use(table)


def _evaluate_table(slos: Sequence[Slo], at: datetime, table: pa.Table) -> list[SloResult]:
    from slo import evaluate_table

    return evaluate_table(slos, at, table)


@click.group()
def slo() -> None:
    """SLO error budgets and burn-rate alerts (PySpark), and equivalent Prometheus rules."""


slo.add_command(stream)


@slo.command()
@config_option
@click.option("--at", "at_time", default=None, help="Evaluation time (ISO 8601, UTC if no zone; default now).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write results as Parquet here (default: slo.results_dir).",
)
@click.option("--pushgateway", "pushgateway_url", help="Also push budget gauges here (default: slo.pushgateway_url).")
@click.option(
    "--buckets",
    "buckets_dir",
    help="Evaluate the bucket table `slo stream` writes instead of the SLOs' sources: a directory (no Spark) or a "
    "Hadoop filesystem URL as --state-dir takes (file://, hdfs://, s3a://...; read through Spark).",
)
def evaluate(
    config_path: Path | None,
    at_time: str | None,
    as_json: bool,
    results_dir: Path | None,
    pushgateway_url: str | None,
    buckets_dir: str | None,
) -> None:
    """SLI, budget remaining, burn rates, firing alerts and time to exhaustion per SLO."""
    at = parse_time(at_time, "--at")
    slos, settings = load_spec(config_path)
    from slo import evaluate, push_gauges, spark_session, write_results

    if buckets_dir is not None:
        results = _bucket_table(buckets_dir, settings, lambda table: _evaluate_table(slos, at, table))
    else:
        results = evaluate(spark_session(settings.spark_master, driver_memory=settings.driver_memory), slos, at)
    results_dir = results_dir or settings.results_dir
    pushgateway_url = pushgateway_url or settings.pushgateway_url
    if results_dir is not None:
        write_results(results, results_dir)
    if pushgateway_url is not None:
        push_gauges(results, pushgateway_url, login=settings.pushgateway_client)
    print_results(results, as_json)


@slo.command()
@config_option
@click.option("--from", "from_time", required=True, help="First evaluation time (ISO 8601).")
@click.option("--to", "to_time", required=True, help="Last evaluation time (ISO 8601).")
@click.option("--step", default="1m", show_default=True, help="Time between evaluations (whole minutes).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--buckets",
    "buckets_dir",
    help="Backtest the bucket table `slo stream` writes instead of the SLOs' sources: a directory (no Spark) or a "
    "Hadoop filesystem URL as --state-dir takes (file://, hdfs://, s3a://...; read through Spark).",
)
def backtest(
    config_path: Path | None, from_time: str, to_time: str, step: str, as_json: bool, buckets_dir: str | None
) -> None:
    """Every interval in which each SLO's alerts would have fired."""
    from slo import parse_duration_s

    start, end = parse_time(from_time, "--from"), parse_time(to_time, "--to")
    if end < start:
        raise click.BadParameter("is before --from", param_hint="--to")
    try:
        step_s = parse_duration_s(step)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--step") from None
    if step_s % 60 or step_s == 0:
        raise click.BadParameter(f"{step!r} is not a whole number of minutes", param_hint="--step")
    slos, settings = load_spec(config_path)
    from slo import backtest, iso, spark_session

    if buckets_dir is not None:
        from slo import backtest_table

        results = _bucket_table(
            buckets_dir, settings, lambda table: backtest_table(slos, start, end, timedelta(seconds=step_s), table)
        )
    else:
        results = backtest(
            spark_session(settings.spark_master, driver_memory=settings.driver_memory),
            slos,
            start,
            end,
            timedelta(seconds=step_s),
        )
    if as_json:
        click.echo(json.dumps({"slos": [r.to_json() for r in results]}, indent=2))
        return
    for r in results:
        labels = "".join(f" {k}={v}" for k, v in sorted(r.labels.items()))
        click.echo(f"{r.name}{labels}: {len(r.alerts)} interval(s)")
        for interval in r.alerts:
            until = iso(interval.end) or "still firing"
            click.echo(f"  {interval.severity:6} {iso(interval.start)} -> {until}")


# --- slo report ---


@slo.command()
@config_option
@click.option("--from", "from_time", required=True, help="Start of the report (ISO 8601); whole minutes.")
@click.option("--to", "to_time", required=True, help="End of the report, exclusive (ISO 8601, or `now`).")
@click.option("--period", type=click.Choice(["month", "week"]), default="month", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["html", "markdown", "json"]), default="markdown", show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write slo-report.html|md|json here (default: print it).",
)
@click.option(
    "--buckets",
    "buckets_dir",
    default=None,
    metavar="LOCATION",
    help="Report from the bucket table `slo stream` keeps (a directory, or a URL as --state-dir takes).",
)
def report(
    config_path: Path | None,
    from_time: str,
    to_time: str,
    period: str,
    fmt: str,
    out_dir: Path | None,
    buckets_dir: str | None,
) -> None:
    """Compliance, budget consumed, incidents, worst hours and a burn-down per SLO and calendar period."""
    from slo import floor_minute

    start, end = floor_minute(parse_time(from_time, "--from")), floor_minute(parse_time(to_time, "--to"))
    if end <= start:
        raise click.BadParameter("is not after --from (whole minutes)", param_hint="--to")
    slos, settings = load_spec(config_path)
    from slo import PERIOD_UNITS, report_json, slo_report, to_html, to_markdown

    series, alerts = (
        _bucket_table(buckets_dir, settings, lambda table: _report_inputs_table(slos, start, end, table))
        if buckets_dir is not None
        else _report_inputs(slos, settings, start, end)
    )
    # Alerts as the burn-rate job would have raised them at every minute of the report.
    fired = {(r.name, tuple(sorted(r.labels.items()))): r.alerts for r in alerts}
    by_name = {s.name: s for s in slos}
    reports = [
        slo_report(
            by_name[s.name],
            s,
            fired.get((s.name, tuple(sorted(s.labels.items()))), ()),
            PERIOD_UNITS[period],
            start,
            end,
        )
        for s in series
    ]
    if fmt == "json":
        text, suffix = json.dumps(report_json(reports, start, end, period), indent=2) + "\n", "json"
    elif fmt == "html":
        text, suffix = to_html(reports, start, end), "html"
    else:
        text, suffix = to_markdown(reports, start, end) + "\n", "md"
    if out_dir is None:
        click.echo(text, nl=False)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"slo-report.{suffix}"
    path.write_text(text, encoding="utf-8")
    click.echo(str(path))


def _report_inputs(
    slos: Sequence[Slo], settings: SloConfig, start: datetime, end: datetime
) -> tuple[list[InstanceMinutes], list[BacktestResult]]:
    """The report's minutes and its minute-by-minute alerts from the SLOs' sources, through Spark."""
    from slo import backtest, minute_series, spark_session

    spark = spark_session(settings.spark_master, driver_memory=settings.driver_memory)
    return minute_series(spark, slos, start, end), backtest(spark, slos, start, end, timedelta(minutes=1))


def _report_inputs_table(
    slos: Sequence[Slo], start: datetime, end: datetime, table: pa.Table
) -> tuple[list[InstanceMinutes], list[BacktestResult]]:
    """The same from the stream's bucket table."""
    from slo import backtest_table, minute_series_table

    return minute_series_table(slos, start, end, table), backtest_table(slos, start, end, timedelta(minutes=1), table)


# --- slo rules ---


@slo.command()
@config_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write slo-<name>.rules.yml and its promtool test slo-<name>.test.yml per SLO here (default: print rules).",
)
@click.option("--check", is_flag=True, help="Run `promtool check rules` and `promtool test rules` on the output.")
def rules(config_path: Path | None, out_dir: Path | None, check: bool) -> None:
    """Prometheus recording and alerting rules (with promtool tests) for SLOs whose SLI lives in Prometheus."""
    from slo import (
        RuleOptions,
        check_output,
        load_rule_slos,
        output_files,
        rules_text,
        select,
        stale_files,
        write_files,
    )

    config = load_or_default(config_path, os.environ)
    source = str(config_path) if config_path is not None else "config"
    base_dir = config_path.parent if config_path is not None else Path.cwd()
    selection = select(load_rule_slos(config, source, base_dir), source)
    for name, why in selection.skipped:
        click.echo(f"slo rules: no rules for {name!r}: {why}", err=True)
    options = RuleOptions(config.alerting.labels, config.alerting.runbook_url)
    files = output_files(selection.chosen, options, source)
    written = write_files(out_dir, files) if out_dir is not None else []
    for path in stale_files(out_dir, files) if out_dir is not None else []:
        click.echo(f"slo rules: {path} is not generated any more (SLO removed or renamed?); delete it", err=True)
    if check:
        check_output(files, selection.chosen, out_dir)
        click.echo(f"promtool: {len(selection.chosen)} rules file(s) valid, their unit tests pass", err=True)
    if out_dir is None:
        click.echo(rules_text(selection.chosen, options, source), nl=False)
    for path in written:
        click.echo(str(path))


# --- end of slo rules ---
