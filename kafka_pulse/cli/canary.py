"""`kafka-pulse canary`: the synthetic producer/consumer as a service, /metrics served until SIGTERM or Ctrl-C."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

import click
from prometheus_client import CollectorRegistry, start_http_server

from canary.mirror import configure_mirror
from canary.service import CanaryService
from canary.sli_log import configure_sli_log
from kafka_pulse.cli.dev import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster
from pulse.config import split_host_port
from pulse.errors import ConfigError
from pulse.paths import state_dir


@click.command()
@config_option
@click.option(
    "--cluster", "cluster_name", default=None, help="Probe this configured cluster (default: canary.cluster)."
)
def canary(config_path: Path | None, cluster_name: str | None) -> None:
    """Run the synthetic producer/consumer: availability, latency and loss per broker and AZ, on /metrics."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_or_default(config_path, os.environ)
    settings = config.canary
    if not settings.enabled:
        raise ConfigError("canary.enabled: false; set it to true to run `kafka-pulse canary`")
    if config.http.basic_auth is not None:
        raise ConfigError("http.basic_auth: not supported by `kafka-pulse canary` yet; remove it or use a proxy")
    cluster = resolve_cluster(config, cluster_name or settings.cluster, dev_home())
    host, port = split_host_port(settings.listen or config.http.listen)
    tls = config.http.tls
    registry = CollectorRegistry()
    sli_log = configure_sli_log(settings.sli_log, registry, state_dir())  # issue #4 point 7
    service = CanaryService(cluster, settings, [sli_log] if sli_log is not None else [], registry=registry)
    mirror = configure_mirror(config, registry, sli_log, cluster)  # issue #4 point 6, if canary.mirror.enabled
    server, _thread = start_http_server(
        port,
        addr=host,
        registry=registry,
        certfile=str(tls.cert_file) if tls is not None else None,
        keyfile=str(tls.key_file) if tls is not None else None,
    )
    if sli_log is not None:
        sli_log.start()
    service.start()
    if mirror is not None:
        mirror.start()
    click.echo(
        f"canary probing {cluster.name} (topic {settings.topic}, every {settings.interval_s:g} s); "
        f"metrics on http{'s' if tls else ''}://{host}:{port}/metrics",
        err=True,
    )
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        while not stopped.wait(0.5):  # short waits: signal handlers run only when the main thread gets back here
            pass
    finally:
        server.shutdown()
        service.stop()
        if mirror is not None:
            mirror.stop()
        if sli_log is not None:
            sli_log.stop()  # last, so the probes' final rows are written
