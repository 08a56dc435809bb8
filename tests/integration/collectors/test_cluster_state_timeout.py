"""A cluster-state read that runs out of time is `kafka_pulse_cluster_state_up 0` with the reason counted, never a
crash of the scrape: on the 10,000-partition cluster a timed-out describe_configs escaped as a "scrape crashed"
traceback every cycle and left no cluster-state series at all (docs/benchmarks.md)."""

from __future__ import annotations

import logging

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from collectors.service import CollectorService
from pulse.config import parse_config
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def test_a_timed_out_state_read_is_down_with_its_reason(kafka: KafkaHandle, caplog: pytest.LogCaptureFixture) -> None:
    text = yaml.safe_dump(
        {
            "clusters": [{"name": "dev", "bootstrap_servers": kafka.bootstrap_servers}],
            "collectors": {"scrape_interval_s": 1, "admin_timeout_s": 0.001},  # no real cluster answers in 1 ms
        }
    )
    config = parse_config(text, "pulse.yaml", {})
    registry = CollectorRegistry()
    service = CollectorService(config.clusters, config.collectors)
    service.register(registry)
    caplog.set_level(logging.WARNING)
    service.start()
    try:
        # The very first read may fail as "transport" while the client connects; the next ones time out.
        result = service.states["dev"].wait_for(lambda r: r.reason == "timeout", 60)
    finally:
        service.stop()
    assert result.error is not None and "timed out after 0.001 s" in result.error, result
    assert result.reason == "timeout"
    exposed = generate_latest(registry).decode()
    assert 'kafka_pulse_cluster_state_up{cluster="dev"} 0.0' in exposed
    failures = [line for line in exposed.splitlines() if line.startswith("kafka_pulse_cluster_state_failures_total")]
    assert any('reason="timeout"' in line and float(line.rsplit(" ", 1)[1]) >= 1 for line in failures), failures
    assert not [r for r in caplog.records if "tick failed" in r.getMessage()]  # the loop's word for a crash
