"""`kafka-pulse collect`: broker and client JMX metrics and Admin API cluster state on /metrics until interrupted."""

from __future__ import annotations

import os
from pathlib import Path

import click

from devstack import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster
from kafka_pulse.runner.assembly import Assembly, add_collectors
from pulse.lifecycle import configure_logging, run_until_signal


@click.command()
@config_option
@click.option("--cluster", "cluster_name", default=None, help="Only this configured cluster (default: all).")
def collect(config_path: Path | None, cluster_name: str | None) -> None:
    """Serve broker JMX metrics, cluster state from the Admin API and the JMX metrics of the client targets in
    `collectors.clients` on /metrics (at `http.listen`)."""
    configure_logging()
    config = load_or_default(config_path, os.environ)
    if config.clusters and cluster_name is None:
        clusters = list(config.clusters)
    else:
        clusters = [resolve_cluster(config, cluster_name, dev_home())]
    # The listener starts first, so a busy port or a bad certificate fails before any JMX connection is made.
    assembly = Assembly(config.http)
    add_collectors(assembly, config, clusters)
    names = ", ".join(c.name for c in clusters)
    targets = config.collectors.clients
    if targets:
        names += f" and {len(targets)} client target{'s' if len(targets) > 1 else ''}"

    def started() -> None:
        click.echo(f"collecting {names}; metrics on {assembly.url}/metrics{assembly.login_note}", err=True)

    run_until_signal(assembly, started)
