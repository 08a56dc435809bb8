"""`kafka-pulse collect`: broker and client JMX metrics and Admin API cluster state on /metrics until interrupted."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

import click
from prometheus_client import CollectorRegistry

from collectors.service import CollectorService
from kafka_pulse.cli.dev import dev_home
from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default, resolve_cluster
from pulse.http_server import HttpServer


@click.command()
@config_option
@click.option("--cluster", "cluster_name", default=None, help="Only this configured cluster (default: all).")
def collect(config_path: Path | None, cluster_name: str | None) -> None:
    """Serve broker JMX metrics, cluster state from the Admin API and the JMX metrics of the client targets in
    `collectors.clients` on /metrics (at `http.listen`)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_or_default(config_path, os.environ)
    if config.clusters and cluster_name is None:
        clusters = list(config.clusters)
    else:
        clusters = [resolve_cluster(config, cluster_name, dev_home())]
    service = CollectorService(clusters, config.collectors)
    registry = CollectorRegistry()
    service.register(registry)
    # The listener binds first, so a busy port or a bad certificate fails before any JMX connection is made.
    server = HttpServer.from_config(config.http, registry).start()
    try:
        service.start()
    except BaseException:
        server.stop()
        raise
    names = ", ".join(c.name for c in clusters)
    targets = config.collectors.clients
    if targets:
        names += f" and {len(targets)} client target{'s' if len(targets) > 1 else ''}"
    login = " (basic auth)" if config.http.basic_auth is not None else ""
    click.echo(f"collecting {names}; metrics on {server.url}/metrics{login}", err=True)
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        # Short waits, not one long one: a signal may land on a JVM thread, and Python only runs its handler
        # when the main thread gets back to bytecode.
        while not stopped.wait(0.5):
            pass
    finally:
        server.stop()
        service.stop()
