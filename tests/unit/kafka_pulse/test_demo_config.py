"""The demo's config and summary (pure): short lag windows, a 15 s SLO schedule, and the status page first."""

from pathlib import Path

import yaml

from kafka_pulse.runner.demo import SLO_SCHEDULE_S, demo_config, where_to_look
from pulse.config import parse_config


def test_the_demo_config_validates_and_shows_results_within_a_minute() -> None:
    raw = demo_config("127.0.0.1:8000", "http://127.0.0.1:9090", Path("/tmp/slo"), "http://127.0.0.1:9093")
    config = parse_config(yaml.safe_dump(raw), "demo", {})
    assert config.lag.intervals * 2 <= 10  # 5 commits at the traffic's 2 s auto-commit: a full window in 10 s
    assert config.lag.intervals * config.lag.offset_refresh_s <= 30  # the enhanced STOP warm-up
    assert config.slo.schedule_s == SLO_SCHEDULE_S <= 15
    assert config.lag.notify.enabled and config.alerting.enabled


def test_the_summary_starts_with_the_status_page() -> None:
    urls = {"status page": "http://127.0.0.1:8000/", "metrics": "http://127.0.0.1:8000/metrics"}
    lines = where_to_look(urls, Path("/state"), Path("/state/demo/pulse.yaml")).splitlines()
    assert lines[1] == "  status page:  http://127.0.0.1:8000/"
