"""`kafka-pulse run`: collectors, canary, lag and the SLO schedule in one process, one /metrics beside the lag API,
until SIGTERM or Ctrl-C; then every component stops in reverse order and the process exits 0."""

from __future__ import annotations

import os
from pathlib import Path

import click

from devstack import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default
from pulse.lifecycle import configure_logging, run_until_signal
from pulse.paths import state_dir


@click.command()
@config_option
def run(config_path: Path | None) -> None:
    """Run collectors, canary and lag in one process with one /metrics and the Burrow v3 lag API on
    `http.listen` (127.0.0.1:9308 by default; `http.basic_auth` and `http.tls` apply to both), and the SLO job
    every `slo.schedule_s` when SLOs are configured. Stops cleanly on SIGTERM or Ctrl-C."""
    configure_logging()
    from kafka_pulse.runner.suite import Suite

    config = load_or_default(config_path, os.environ)
    source = str(config_path) if config_path is not None else "config"
    base_dir = config_path.parent if config_path is not None else Path.cwd()
    suite = Suite(config, source, base_dir, dev_home(), state_dir())  # validates everything, starts nothing
    run_until_signal(suite, lambda: click.echo(suite.status_line(), err=True))
    click.echo("kafka-pulse run: stopped", err=True)
