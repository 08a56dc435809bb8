"""`kafka-pulse canary` refuses what it cannot run before starting anything."""

from pathlib import Path

from click.testing import CliRunner

from kafka_pulse.cli.main import cli


def run(tmp_path: Path, text: str) -> tuple[int, str]:
    config = tmp_path / "pulse.yaml"
    config.write_text(text)
    result = CliRunner().invoke(cli, ["canary", "--config", str(config)], prog_name="kafka-pulse")
    return result.exit_code, result.output


def test_disabled_canary_is_refused(tmp_path: Path) -> None:
    code, output = run(
        tmp_path, "clusters: [{name: a, bootstrap_servers: '127.0.0.1:9092'}]\ncanary: {enabled: false}\n"
    )
    assert code == 2
    assert "ConfigError: canary.enabled: false; set it to true to run `kafka-pulse canary`" in output


def test_bad_canary_section_is_refused_with_its_key(tmp_path: Path) -> None:
    code, output = run(tmp_path, "canary: {latency_slo_s: 5, loss_deadline_s: 1}\n")
    assert code == 2
    assert "canary.loss_deadline_s: 1 s is shorter than latency_slo_s 5 s" in output


def test_unknown_cluster_is_refused(tmp_path: Path) -> None:
    code, output = run(tmp_path, "clusters: [{name: a, bootstrap_servers: '127.0.0.1:9092'}]\ncanary: {cluster: b}\n")
    assert code == 2
    assert "unknown cluster 'b'; configured clusters: a" in output
