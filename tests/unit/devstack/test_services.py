"""The config renderers of the local service stack: pure functions, read back with the parsers the services use."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from devstack.alertmanager import AlertRouting, render_alertmanager_config
from devstack.prometheus import ScrapeTarget, render_prometheus_config
from devstack.pushgateway import Pushgateway, grouping_path
from devstack.services import duration
from pulse.errors import ConfigError, DependencyMissing
from pulse.process import require_program
from tests.support.burrow import BurrowOptions, render_burrow_toml, toml_string
from tests.support.zookeeper import render_zoo_cfg


@pytest.mark.parametrize(
    ("seconds", "want"),
    [(1, "1s"), (1.0, "1s"), (0.5, "500ms"), (3600, "3600s"), (2.25, "2250ms")],
)
def test_duration_is_a_prometheus_duration(seconds: float, want: str) -> None:
    assert duration(seconds) == want


def test_duration_refuses_zero() -> None:
    with pytest.raises(ConfigError, match="duration must be positive, got 0"):
        duration(0)


def test_prometheus_config_has_jobs_rules_and_alertmanager() -> None:
    text = render_prometheus_config(
        [
            ScrapeTarget("pushgateway", ("127.0.0.1:9091",), honor_labels=True),
            ScrapeTarget("collector", ("127.0.0.1:9100", "127.0.0.1:9101"), labels={"cluster": "local"}),
        ],
        rule_files=[Path("/tmp/rules.yml")],
        alertmanagers=["127.0.0.1:9093"],
    )
    config = yaml.safe_load(text)

    assert config["global"] == {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"}
    assert config["rule_files"] == ["/tmp/rules.yml"]
    assert config["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:9093"]}]}]}
    pushgateway, collector = config["scrape_configs"]
    assert pushgateway["job_name"] == "pushgateway"
    assert pushgateway["honor_labels"] is True
    assert collector["static_configs"] == [
        {"targets": ["127.0.0.1:9100", "127.0.0.1:9101"], "labels": {"cluster": "local"}}
    ]
    assert collector["honor_labels"] is False


def test_prometheus_config_without_alertmanager_has_no_alerting_section() -> None:
    config = yaml.safe_load(render_prometheus_config([], scrape_interval_s=0.5, evaluation_interval_s=2))
    assert "alerting" not in config
    assert config["global"]["scrape_interval"] == "500ms"
    assert config["global"]["evaluation_interval"] == "2s"


@pytest.mark.parametrize(
    ("targets", "alertmanagers", "message"),
    [
        pytest.param(
            [ScrapeTarget("a", ("127.0.0.1:1",)), ScrapeTarget("a", ("127.0.0.1:2",))],
            [],
            "prometheus: scrape job names must be unique, repeated: ['a']",
            id="duplicate-job",
        ),
        pytest.param(
            [ScrapeTarget("a", ("127.0.0.1:1", "kafka1"))],
            [],
            "prometheus: targets[0] (a).targets[1]: 'kafka1' is not host:port",
            id="target-without-port",
        ),
        pytest.param([], ["127.0.0.1:x"], "prometheus: alertmanagers[0]: '127.0.0.1:x' is not host:port", id="am"),
    ],
)
def test_prometheus_config_refuses_bad_input(
    targets: list[ScrapeTarget], alertmanagers: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        render_prometheus_config(targets, alertmanagers=alertmanagers)
    assert str(error.value) == message


def test_alertmanager_config_routes_everything_to_one_receiver() -> None:
    config = yaml.safe_load(
        render_alertmanager_config("http://127.0.0.1:5000/hook", AlertRouting(repeat_interval_s=30))
    )

    assert config["route"] == {
        "receiver": "pulse",
        "group_by": ["..."],
        "group_wait": "1s",
        "group_interval": "1s",
        "repeat_interval": "30s",
    }
    assert config["receivers"] == [
        {"name": "pulse", "webhook_configs": [{"url": "http://127.0.0.1:5000/hook", "send_resolved": True}]}
    ]


def test_alertmanager_config_adds_pagerduty_when_asked() -> None:
    config = yaml.safe_load(
        render_alertmanager_config("http://127.0.0.1:5000/hook", pagerduty_url="http://127.0.0.1:5000/v2/enqueue")
    )
    (pagerduty,) = config["receivers"][0]["pagerduty_configs"]
    assert pagerduty["url"] == "http://127.0.0.1:5000/v2/enqueue"
    assert pagerduty["routing_key"]


def test_alertmanager_config_refuses_a_url_without_scheme() -> None:
    with pytest.raises(ConfigError) as error:
        render_alertmanager_config("127.0.0.1:5000/hook")
    assert str(error.value) == "alertmanager: webhook_url: '127.0.0.1:5000/hook' is not an http(s) URL"


def test_zoo_cfg_binds_loopback_without_admin_server() -> None:
    lines = render_zoo_cfg(Path("/tmp/zk/data"), 2181).splitlines()
    cfg = dict(line.split("=", 1) for line in lines)

    assert cfg["clientPort"] == "2181"
    assert cfg["clientPortAddress"] == "127.0.0.1"
    assert cfg["admin.enableServer"] == "false"
    assert cfg["4lw.commands.whitelist"] == "ruok,srvr"
    assert cfg["dataDir"] == "/tmp/zk/data"


def test_burrow_toml_has_the_side_by_side_config() -> None:
    text = render_burrow_toml(
        zookeeper=["127.0.0.1:2181"],
        bootstrap_servers=["127.0.0.1:9092", "127.0.0.1:9093"],
        cluster="local",
        http_address="127.0.0.1:8000",
        pidfile=Path("/tmp/burrow/burrow.pid"),
    )
    config = tomllib.loads(text)

    assert config["general"] == {"pidfile": "/tmp/burrow/burrow.pid"}
    assert config["logging"] == {"level": "info"}  # no filename: Burrow logs to stdout, our log file
    assert config["zookeeper"] == {"servers": ["127.0.0.1:2181"], "timeout": 6, "root-path": "/burrow"}
    assert config["client-profile"]["pulse"] == {"client-id": "burrow-pulse", "kafka-version": "2.1.0"}
    assert config["cluster"]["local"] == {
        "class-name": "kafka",
        "servers": ["127.0.0.1:9092", "127.0.0.1:9093"],
        "client-profile": "pulse",
        "topic-refresh": 30,
        "offset-refresh": 10,
    }
    assert config["consumer"]["local"] == {
        "class-name": "kafka",
        "cluster": "local",
        "servers": ["127.0.0.1:9092", "127.0.0.1:9093"],
        "client-profile": "pulse",
        "start-latest": False,
        "group-blacklist": "^console-consumer-",
    }
    assert config["storage"]["default"] == {
        "class-name": "inmemory",
        "intervals": 10,
        "min-distance": 1,
        "expire-group": 604800,
        "workers": 20,
    }
    assert config["evaluator"]["default"] == {"class-name": "caching", "expire-cache": 1, "minimum-complete": 0.0}
    assert config["httpserver"]["default"] == {"address": "127.0.0.1:8000"}


def test_burrow_toml_carries_options_and_quotes_odd_cluster_names() -> None:
    options = BurrowOptions(intervals=5, offset_refresh_s=2, min_distance_s=0, expire_cache_s=3, start_latest=True)
    config = tomllib.loads(
        render_burrow_toml(["127.0.0.1:2181"], ["127.0.0.1:9092"], "prod.eu-1", "127.0.0.1:1", Path("/p"), options)
    )

    assert set(config["cluster"]) == {"prod.eu-1"}
    assert config["consumer"]["prod.eu-1"]["cluster"] == "prod.eu-1"
    assert config["cluster"]["prod.eu-1"]["offset-refresh"] == 2
    assert config["consumer"]["prod.eu-1"]["start-latest"] is True
    assert config["storage"]["default"]["intervals"] == 5
    assert config["storage"]["default"]["min-distance"] == 0
    assert config["evaluator"]["default"]["expire-cache"] == 3


@pytest.mark.parametrize(
    ("bootstrap", "zookeeper", "message"),
    [
        pytest.param(
            ["127.0.0.1:9092", "kafka1"],
            ["127.0.0.1:2181"],
            "burrow: bootstrap_servers[1]: 'kafka1' is not host:port",
            id="broker-without-port",
        ),
        pytest.param([], ["127.0.0.1:2181"], "burrow: bootstrap_servers: at least one host:port is needed", id="none"),
        pytest.param(["127.0.0.1:9092"], [":2181"], "burrow: zookeeper[0]: ':2181' is not host:port", id="zk"),
    ],
)
def test_burrow_toml_refuses_bad_addresses(bootstrap: list[str], zookeeper: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        render_burrow_toml(zookeeper, bootstrap, "local", "127.0.0.1:8000", Path("/p"))
    assert str(error.value) == message


@pytest.mark.parametrize("value", ['a"b', "back\\slash", "new\nline\ttab", "del\x7f bell\x07", "ünïcode ✓ 😀", ""])
def test_toml_string_round_trips(value: str) -> None:
    assert tomllib.loads(f"v = {toml_string(value)}")["v"] == value


@pytest.mark.parametrize(
    ("job", "grouping", "want"),
    [
        ("canary", None, "/metrics/job/canary"),
        ("slo", {"cluster": "local"}, "/metrics/job/slo/cluster/local"),
        ("slo", {"topic": "a/b"}, "/metrics/job/slo/topic@base64/YS9i"),
        ("slo", {"topic": ""}, "/metrics/job/slo/topic@base64/="),
    ],
)
def test_pushgateway_grouping_path(job: str, grouping: dict[str, str] | None, want: str) -> None:
    assert grouping_path(job, grouping) == want


def test_a_missing_program_names_its_debian_package() -> None:
    with pytest.raises(DependencyMissing) as error:
        require_program("kafka-pulse-no-such-program", "prometheus")
    assert str(error.value) == (
        "'kafka-pulse-no-such-program' is not on PATH; install the Debian package 'prometheus' "
        "(apt-get install prometheus)"
    )


def test_a_service_whose_binary_is_missing_fails_before_launching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    service = Pushgateway(tmp_path / "pg")

    with pytest.raises(DependencyMissing, match="install the Debian package 'prometheus-pushgateway'"):
        service.start()
    assert service.process is None
