"""`kafka-pulse canary`: the synthetic producer/consumer as a service, /metrics served until SIGTERM or Ctrl-C."""

from __future__ import annotations

import os
from pathlib import Path

import click

from devstack import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster
from kafka_pulse.runner.assembly import Assembly, add_canary, add_sli_sink
from pulse.errors import ConfigError
from pulse.lifecycle import configure_logging, run_until_signal
from pulse.paths import state_dir


@click.command()
@config_option
@click.option(
    "--cluster", "cluster_name", default=None, help="Probe this configured cluster (default: canary.cluster)."
)
def canary(config_path: Path | None, cluster_name: str | None) -> None:
    """Run the synthetic producer/consumer: availability, latency and loss per broker and AZ, on /metrics
    (at `canary.listen`, else `http.listen`, with `http.basic_auth` and `http.tls`)."""
    configure_logging()
    config = load_or_default(config_path, os.environ)
    settings = config.canary
    if not settings.enabled:
        raise ConfigError("canary.enabled: false; set it to true to run `kafka-pulse canary`")
    cluster = resolve_cluster(config, cluster_name or settings.cluster, dev_home())
    where = "canary.listen" if settings.listen is not None else "http.listen"
    assembly = Assembly(config.http, settings.listen, where)
    if config.sli_sink.enabled:
        add_sli_sink(
            assembly, config, resolve_cluster(config, config.sli_sink.cluster, dev_home()), "canary", state_dir()
        )
    add_canary(assembly, config, cluster, state_dir())

    def started() -> None:
        click.echo(
            f"canary probing {cluster.name} (topic {settings.topic}, every {settings.interval_s:g} s); "
            f"metrics on {assembly.url}/metrics{assembly.login_note}",
            err=True,
        )

    run_until_signal(assembly, started)
