"""`canary.mirror`: refused with its key before anything starts, and the names it derives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kafka_pulse.cli.main import cli
from pulse.config import CanaryMirrorConfig, parse_config
from pulse.errors import ConfigError

TWO_CLUSTERS = [
    {"name": "dc1", "bootstrap_servers": "127.0.0.1:9092"},
    {"name": "dc2", "bootstrap_servers": "127.0.0.1:9192"},
]


def problems(mirror: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml.safe_dump({"canary": {"mirror": mirror}}), "pulse.yaml", {})
    return str(caught.value)


@pytest.mark.parametrize(
    ("mirror", "message"),
    [
        ({"enabled": True}, "pulse.yaml: canary.mirror.target: required when mirror mode is enabled"),
        ({"source": "dc1", "target": "dc1"}, "canary.mirror.target: 'dc1' is also the source"),
        ({"topic": "a b"}, "canary.mirror.topic: 'a b' is not a Kafka topic name"),
        ({"target_topic": ""}, "canary.mirror.target_topic: '' is not a Kafka topic name"),
        ({"loss_deadline_s": 0}, "canary.mirror.loss_deadline_s: Input should be greater than 0"),
    ],
)
def test_bad_mirror_sections_are_refused_with_their_key(mirror: dict[str, object], message: str) -> None:
    assert message in problems(mirror)


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({}, "dc1.pulse-canary-mirror"),
        ({"source_alias": "east"}, "east.pulse-canary-mirror"),
        ({"target_topic": "pulse-canary-mirror"}, "pulse-canary-mirror"),  # IdentityReplicationPolicy
    ],
)
def test_mirrored_topic_follows_mirrormakers_default_policy(fields: dict[str, str], want: str) -> None:
    assert CanaryMirrorConfig.model_validate(fields).mirrored_topic("dc1") == want


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canary: dict[str, object]) -> tuple[int, str]:
    monkeypatch.setenv("KAFKA_PULSE_HOME", str(tmp_path / "state"))
    config = tmp_path / "pulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": TWO_CLUSTERS, "canary": canary}))
    result = CliRunner().invoke(cli, ["canary", "--config", str(config)], prog_name="kafka-pulse")
    return result.exit_code, result.output


def test_the_cli_refuses_an_unknown_mirror_target_before_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output = run(tmp_path, monkeypatch, {"cluster": "dc1", "mirror": {"enabled": True, "target": "dc3"}})
    assert code == 2
    assert "ConfigError: canary.mirror.target: unknown cluster 'dc3'; configured clusters: dc1, dc2" in output
    assert not (tmp_path / "state").exists()  # no SLI log was opened


def test_the_cli_refuses_an_unknown_mirror_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = {"enabled": True, "source": "dc0", "target": "dc2"}
    code, output = run(tmp_path, monkeypatch, {"cluster": "dc1", "mirror": mirror})
    assert code == 2
    assert "ConfigError: canary.mirror.source: unknown cluster 'dc0'; configured clusters: dc1, dc2" in output


def test_the_cli_refuses_mirroring_the_probed_cluster_onto_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output = run(tmp_path, monkeypatch, {"cluster": "dc2", "mirror": {"enabled": True, "target": "dc2"}})
    assert code == 2
    assert "ConfigError: canary.mirror.target: 'dc2' is also the source; mirror mode needs two clusters" in output
