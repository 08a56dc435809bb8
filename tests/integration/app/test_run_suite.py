"""`kafka-pulse run`'s composition without Kafka: with lag off the one /metrics is pulse's own
listener, still behind `http.basic_auth`; and a bad SLO spec is refused before anything binds or starts."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kafka_pulse.runner.suite import Suite
from pulse.config import parse_config
from pulse.ports import free_ports, is_listening
from slo.spec import InvalidSpec

pytestmark = pytest.mark.integration

PASSWORD = "only-" + "metrics-here"


def config_text(port: int, extra: str = "") -> str:
    return f"""
clusters:
  - name: nowhere
    bootstrap_servers: 127.0.0.1:9
collectors: {{enabled: false}}
canary: {{enabled: false}}
lag: {{enabled: false}}
http:
  listen: 127.0.0.1:{port}
  basic_auth: {{username: prometheus, password: {PASSWORD}}}
{extra}"""


def test_with_lag_off_metrics_come_from_pulses_listener_behind_the_login(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    config = parse_config(config_text(port), "test", {})
    suite = Suite(config, "test", tmp_path, tmp_path / "dev", tmp_path)
    suite.start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert httpx.get(url, timeout=10).status_code == 401
        assert httpx.get(url, auth=("prometheus", PASSWORD), timeout=10).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/v3/kafka", auth=("prometheus", PASSWORD)).status_code == 404
        line = suite.status_line()
        for off in ("lag: off (lag.enabled is false)", "collectors: off", "canary: off", "slo: off (no SLOs"):
            assert off in line, line
        assert f"metrics {url} (basic auth)" in line and "lag API" not in line
    finally:
        suite.stop()
    assert not is_listening(port)


def test_a_bad_slo_spec_is_refused_before_anything_binds(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    bad = (
        "slos:\n  - {name: produce, source: {type: events, path: missing}, good: ok, total: 'true', objective: 99.9}\n"
    )
    config = parse_config(config_text(port, bad), "test", {})
    with pytest.raises(InvalidSpec) as refused:
        Suite(config, "test", tmp_path, tmp_path / "dev", tmp_path)
    assert "slos[0]" in str(refused.value)
    assert not is_listening(port)
