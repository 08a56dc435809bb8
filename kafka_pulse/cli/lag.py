"""`kafka-pulse lag` commands: `lag` runs the evaluator service for every configured cluster until SIGTERM/Ctrl-C;
`lag replay` feeds a recorded JSONL stream through the evaluator, with no Kafka."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import click

from kafka_pulse.cli.dev import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster
from lag.replay import ReplaySettings, replay
from lag.runner import LagRunner
from pulse.alerts import AlertSink, AlertSinkCollector
from pulse.config import split_host_port
from pulse.errors import ConfigError, PulseError
from pulse.paths import state_dir


class ReplayInputInvalid(PulseError):
    """Some lines of the replay input were malformed (each was reported with its line number and skipped)."""


@click.group(invoke_without_command=True)
@config_option
@click.option(
    "--cluster",
    "cluster_names",
    multiple=True,
    help="Only this configured cluster (repeatable; default: every configured cluster, else the dev cluster).",
)
@click.option("--listen", default=None, help="host:port of the API and /metrics (default: lag.listen, http.listen).")
@click.pass_context
def lag(ctx: click.Context, config_path: Path | None, cluster_names: tuple[str, ...], listen: str | None) -> None:
    """Evaluate consumer groups (Burrow-compatible) and serve the Burrow v3 API; `lag replay` replays a file.

    Without a subcommand, runs until SIGTERM or Ctrl-C: reads every configured cluster, serves the Burrow v3 API
    and /metrics, and (with lag.notify) opens and resolves incidents in Alertmanager.
    """
    if ctx.invoked_subcommand is not None:
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_or_default(config_path, os.environ)
    if not config.lag.enabled:
        raise ConfigError("lag.enabled is false: nothing to run (set it to true or leave it out)")
    if config.clusters:
        clusters = [config.cluster(n) for n in cluster_names] if cluster_names else list(config.clusters)
    else:
        clusters = [resolve_cluster(config, n, dev_home()) for n in (cluster_names or (None,))]
    if listen is not None:
        try:
            split_host_port(listen)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--listen") from None
    sink = AlertSink.from_config(config.alerting, state_dir()) if config.lag.notify.enabled else None
    runner = LagRunner(config, clusters, sink, listen)
    if sink is not None:
        runner.registry.register(AlertSinkCollector(sink))
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    runner.start()
    names = ", ".join(c.name for c in clusters)
    click.echo(f"lag: evaluating {names} ({config.lag.mode} rules); Burrow v3 API and /metrics on {runner.api.url}",
               err=True)  # fmt: skip
    try:
        while not stopped.wait(0.5):  # short waits: the signal handler only runs when the main thread wakes
            pass
    finally:
        runner.stop()
        if sink is not None:
            sink.close()
    click.echo("lag: stopped", err=True)


@lag.command("replay")
@config_option
@click.option(
    "--input",
    "input_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSONL of broker/commit/evaluate lines ('-' for stdin).",
)
@click.option("--mode", type=click.Choice(["burrow", "burrow-1.2", "enhanced"]), default="enhanced", show_default=True)
@click.option("--intervals", type=click.IntRange(1, 255), default=10, show_default=True, help="Commits per window.")
@click.option(
    "--offset-refresh",
    "offset_refresh_s",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="HWM refresh interval in seconds (enhanced warm-up is intervals x this).",
)
@click.option(
    "--min-distance",
    "min_distance_s",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds; a commit closer than this to the previous one replaces it (Burrow's min-distance).",
)
@click.option("--allowed-lag", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--minimum-complete", type=click.FloatRange(0, 1), default=0.0, show_default=True)
def replay_command(
    config_path: Path | None,
    input_path: Path,
    mode: str,
    intervals: int,
    offset_refresh_s: float,
    min_distance_s: float,
    allowed_lag: int,
    minimum_complete: float,
) -> None:
    """Feed recorded offsets and commits (JSONL) through the evaluator, with no Kafka.

    Prints one JSON line per `evaluate` line: the `status` object of Burrow's /lag response at that time.
    """
    settings = ReplaySettings(
        mode=mode,  # type: ignore[arg-type]  # click.Choice guarantees a Mode
        intervals=intervals,
        offset_refresh_s=offset_refresh_s,
        min_distance_s=min_distance_s,
        allowed_lag=allowed_lag,
        minimum_complete=minimum_complete,
    )
    bad: list[int] = []

    def report(number: int, why: str) -> None:
        bad.append(number)
        click.echo(f"{input_path}:{number}: {why}", err=True)

    try:
        stream = sys.stdin if str(input_path) == "-" else input_path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--input {input_path}: {exc.strerror}") from exc
    with stream:
        for status in replay(stream, settings, report):
            click.echo(json.dumps(status, separators=(",", ":")))
    if bad:
        raise ReplayInputInvalid(f"{len(bad)} malformed line(s) skipped in {input_path}: {bad[:10]}")
