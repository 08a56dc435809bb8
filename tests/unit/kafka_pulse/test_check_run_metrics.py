"""The check reads a run's /metrics once for its three readers (self-health, slow brokers, noisy neighbours), through
pulse/http's outbound client, with the listener's login and over its TLS; a listener on loopback, no Kafka."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import SecretStr

from devstack.tls import create_pem_files
from kafka_pulse.check.consult.noisy_neighbours import read_noisy_neighbours
from kafka_pulse.check.consult.run_metrics import RunMetrics
from kafka_pulse.check.consult.self_check import self_health_facts
from kafka_pulse.check.consult.slow_brokers import read_slow_brokers
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import NotAvailable, ProbeFailed
from kafka_pulse.runner.heartbeat import SelfHealthCollector
from kafka_pulse.self_health import SelfHealth, Watched
from pulse.config import HttpConfig
from pulse.config.http import BasicAuthConfig
from pulse.http import HttpServer
from pulse.ports import LOOPBACK, free_ports

PASSWORD = "run-" + "metrics-login-3"


class CountingCollector(Collector):
    """A run's slow-broker and noisy-neighbour families; counts the scrapes that rendered them."""

    def __init__(self) -> None:
        self.scrapes = 0

    def collect(self) -> Iterator[Metric]:
        self.scrapes += 1
        slow = GaugeMetricFamily("kafka_pulse_broker_slow", "", labels=("cluster", "broker"))
        slow.add_metric(("dev", "2"), 1.0)
        slow.add_metric(("dev", "1"), 0.0)
        named = GaugeMetricFamily("kafka_pulse_noisy_neighbour", "", labels=("cluster", "broker", "group", "topic"))
        named.add_metric(("dev", "2", "etl", "orders"), 1.0)
        yield from (slow, named)


def serve(http: HttpConfig) -> tuple[HttpServer, CountingCollector]:
    registry = CollectorRegistry()
    counting = CountingCollector()
    registry.register(counting)
    registry.register(SelfHealthCollector(SelfHealth([Watched("lag_reader", 10, lambda: 1.0)])))
    return HttpServer.from_config(http, registry).start(), counting


def test_three_readers_on_three_threads_share_one_read_behind_the_login() -> None:
    (port,) = free_ports(1)
    login = BasicAuthConfig(username="ops", password=SecretStr(PASSWORD))
    http = HttpConfig(listen=f"{LOOPBACK}:{port}", basic_auth=login)
    server, counting = serve(http)
    run = RunMetrics(http, Deadline.after(5))
    results: dict[str, Any] = {}
    readers = {
        "self": lambda: self_health_facts(run),
        "slow": lambda: read_slow_brokers(run, "dev"),
        "neighbours": lambda: read_noisy_neighbours(run, "dev"),
    }
    threads = [threading.Thread(target=lambda k=k, f=f: results.__setitem__(k, f())) for k, f in readers.items()]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        server.stop()

    assert (run.reads, counting.scrapes) == (1, 1)
    [component] = results["self"]
    assert component.component == "lag_reader"
    assert [f.broker for f in results["slow"]] == [2]
    assert [(f.broker, f.group, f.topic) for f in results["neighbours"]] == [(2, "etl", "orders")]
    assert PASSWORD not in repr(results)


def test_tls_listener_is_read_with_its_own_certificate_and_a_wrong_one_is_named(tmp_path: Path) -> None:
    """The served certificate is trusted as configured, though signed by a CA the check is not given; another
    certificate is a TLS failure, not 'no run answers'."""
    pem, other = create_pem_files(tmp_path / "served"), create_pem_files(tmp_path / "other")
    (port,) = free_ports(1)
    http = HttpConfig.model_validate(
        {"listen": f"{LOOPBACK}:{port}", "tls": {"cert_file": str(pem.cert_file), "key_file": str(pem.key_file)}}
    )
    assert http.tls is not None
    wrong = http.model_copy(update={"tls": http.tls.model_copy(update={"cert_file": other.cert_file})})
    server, _ = serve(http)
    try:
        text = RunMetrics(http, Deadline.after(5)).text()
        refused = RunMetrics(wrong, Deadline.after(5)).text()
    finally:
        server.stop()
    gone = RunMetrics(http, Deadline.after(5)).text()

    assert isinstance(text, str) and "kafka_pulse_broker_slow{" in text
    assert isinstance(refused, ProbeFailed) and "TLS handshake failed" in refused.reason, refused
    assert (
        isinstance(gone, NotAvailable)
        and gone.reason == f"no kafka-pulse run answers on https://{LOOPBACK}:{port}/metrics"
    )
