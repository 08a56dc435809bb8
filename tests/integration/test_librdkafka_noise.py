"""While a cluster is unreachable, lag's librdkafka clients write nothing to stderr (they wrote every reconnect
attempt, about 1.6 KB/s): their lines reach Python logging once a minute per kind and are counted on /metrics.
The unreachable cluster is a closed loopback port: what librdkafka does there is what it does for a dead cluster."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from lag.runner import LagRunner
from pulse.config import ClusterConfig, PulseConfig
from pulse.ports import free_ports, wait_until

pytestmark = pytest.mark.integration


def test_an_unreachable_cluster_is_counted_not_written_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    (port,) = free_ports(1)
    cluster = ClusterConfig(name="gone", bootstrap_servers=[f"127.0.0.1:{port}"])
    config = PulseConfig.model_validate(
        {"clusters": [cluster.model_dump(mode="json")], "lag": {"offset_refresh_s": 0.2}}
    )
    registry = CollectorRegistry()
    runner = LagRunner(config, [cluster], registry=registry)

    def suppressed() -> float:
        return sum(
            sample.value
            for family in registry.collect()
            if family.name == "kafka_pulse_librdkafka_logs"
            for sample in family.samples
            if sample.labels.get("outcome") == "suppressed"
        )

    runner.start()
    try:
        assert wait_until(lambda: suppressed() >= 20, 60, interval_s=0.2), suppressed()
    finally:
        runner.stop()
    err = capfd.readouterr().err
    assert "Connection refused" not in err and "Connect to ipv4" not in err, err[-2000:]
