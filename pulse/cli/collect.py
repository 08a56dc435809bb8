"""`kafka-pulse collect`: broker and client JMX metrics and Admin API cluster state on /metrics until interrupted."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

import click
from prometheus_client import CollectorRegistry, start_http_server

from collectors.service import CollectorService
from pulse.cli.dev import dev_home
from pulse.cli.options import config_option
from pulse.clusters import load_or_default, resolve_cluster
from pulse.config import split_host_port
from pulse.errors import ConfigError


@click.command()
@config_option
@click.option("--cluster", "cluster_name", default=None, help="Only this configured cluster (default: all).")
def collect(config_path: Path | None, cluster_name: str | None) -> None:
    """Serve broker JMX metrics, cluster state from the Admin API and the JMX metrics of the client targets in
    `collectors.clients` on /metrics (at `http.listen`)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_or_default(config_path, os.environ)
    if config.http.basic_auth is not None:
        raise ConfigError(
            "http.basic_auth: not supported by `kafka-pulse collect` yet; remove it or front it with a proxy"
        )
    if config.clusters and cluster_name is None:
        clusters = list(config.clusters)
    else:
        clusters = [resolve_cluster(config, cluster_name, dev_home())]
    host, port = split_host_port(config.http.listen)
    tls = config.http.tls
    service = CollectorService(clusters, config.collectors)
    registry = CollectorRegistry()
    service.register(registry)
    service.start()
    server, _thread = start_http_server(
        port,
        addr=host,
        registry=registry,
        certfile=str(tls.cert_file) if tls is not None else None,
        keyfile=str(tls.key_file) if tls is not None else None,
    )
    names = ", ".join(c.name for c in clusters)
    targets = config.collectors.clients
    if targets:
        names += f" and {len(targets)} client target{'s' if len(targets) > 1 else ''}"
    click.echo(f"collecting {names}; metrics on http{'s' if tls else ''}://{config.http.listen}/metrics", err=True)
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        # Short waits, not one long one: a signal may land on a JVM thread, and Python only runs its handler
        # when the main thread gets back to bytecode.
        while not stopped.wait(0.5):
            pass
    finally:
        server.shutdown()
        service.stop()
