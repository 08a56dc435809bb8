"""`kafka-pulse dashboards build`: the checked-in tree under dashboards/ is exactly what the generator writes (so the
two never drift), and the command writes the same tree elsewhere, with SLO rules from a given config."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from dashboards.grafana import DATASOURCE_UID
from kafka_pulse.cli.dashboards import REPO, build_output, stale_files
from kafka_pulse.cli.main import cli

CHECKED_IN = REPO / "dashboards"
DEFAULTS = ("http://127.0.0.1:9090", "/var/lib/grafana/dashboards/kafka-pulse")


def test_the_checked_in_files_are_what_the_generator_writes() -> None:
    output = build_output(None, *DEFAULTS)
    assert output.notes == []
    assert sorted(output.files) == [
        "alertmanager/alertmanager.yml",
        "json/kafka-pulse-canary.json",
        "json/kafka-pulse-cluster.json",
        "json/kafka-pulse-lag.json",
        "json/kafka-pulse-slo.json",
        "json/kafka-pulse-tiered.json",
        "prometheus/slo-broker-produce-errors.rules.yml",
        "prometheus/slo-broker-produce-errors.test.yml",
        "prometheus/slo-canary-produce-availability.rules.yml",
        "prometheus/slo-canary-produce-availability.test.yml",
        "provisioning/dashboards.yaml",
        "provisioning/datasources.yaml",
    ]
    drifted = [p for p, text in output.files.items() if (CHECKED_IN / p).read_text(encoding="utf-8") != text]
    assert drifted == [], "regenerate with `kafka-pulse dashboards build` in the repository root"
    assert stale_files(CHECKED_IN, output.files) == []


def test_the_rules_and_alertmanager_beside_them_are_the_examples() -> None:
    output = build_output(None, *DEFAULTS)
    assert output.files["alertmanager/alertmanager.yml"] == (REPO / "examples/alertmanager.yml").read_text()
    for name in ("slo-canary-produce-availability.rules.yml", "slo-broker-produce-errors.test.yml"):
        assert output.files[f"prometheus/{name}"] == (REPO / "examples/prometheus-rules" / name).read_text()


def test_provisioning_names_the_uid_the_dashboards_use() -> None:
    files = build_output(None, "http://prom.internal:9090", "/srv/dashboards").files
    (source,) = yaml.safe_load(files["provisioning/datasources.yaml"])["datasources"]
    assert (source["uid"], source["type"], source["url"]) == (DATASOURCE_UID, "prometheus", "http://prom.internal:9090")
    assert source["jsonData"]["timeInterval"] == "15s"
    (provider,) = yaml.safe_load(files["provisioning/dashboards.yaml"])["providers"]
    assert provider["options"]["path"] == "/srv/dashboards"
    assert provider["type"] == "file"


def test_build_writes_the_tree_and_rules_of_the_configs_slos(tmp_path: Path) -> None:
    config = tmp_path / "pulse.yaml"
    slo = {
        "name": "fetch-ok",
        "source": {"type": "prometheus", "url": "http://127.0.0.1:9090"},
        "good": "sum(increase(a_total[1m]))",
        "total": "sum(increase(b_total[1m]))",
        "objective": 99,
    }
    config.write_text(yaml.safe_dump({"collectors": {"scrape_interval_s": 5}, "slos": [slo]}))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["dashboards", "build", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "prometheus/slo-fetch-ok.rules.yml").is_file()
    assert not (out / "prometheus/slo-canary-produce-availability.rules.yml").exists()
    assert "timeInterval: 5s" in (out / "provisioning/datasources.yaml").read_text()
    for name in ("kafka-pulse-cluster.json", "kafka-pulse-canary.json", "kafka-pulse-lag.json", "kafka-pulse-slo.json"):
        assert (out / "json" / name).read_text() == (CHECKED_IN / "json" / name).read_text()
        assert str(out / "json" / name) in result.stdout


def test_a_config_without_slos_builds_dashboards_and_says_there_are_no_rules(tmp_path: Path) -> None:
    config = tmp_path / "pulse.yaml"
    config.write_text("clusters: []\n")
    out = tmp_path / "out"
    (out / "json").mkdir(parents=True)
    (out / "json" / "kafka-old.json").write_text("{}")
    result = CliRunner().invoke(cli, ["dashboards", "build", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"dashboards build: no SLO rules: {config} has no SLOs" in result.stderr
    assert f"dashboards build: {out / 'json' / 'kafka-old.json'} is not generated any more" in result.stderr
    assert not (out / "prometheus").exists()


def test_a_bad_slo_spec_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    config = tmp_path / "pulse.yaml"
    config.write_text(yaml.safe_dump({"slos": [{"name": "x", "source": {"type": "prometheus"}, "objective": 100}]}))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["dashboards", "build", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "slos[0]" in result.stderr
    assert not out.exists()
