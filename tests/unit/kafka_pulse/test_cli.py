"""The CLI's shape: every public command of the design is listed and takes --config."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_pulse.cli.main import cli

DESIGN_COMMANDS = [
    "dev up",
    "dev down",
    "dev status",
    "run",
    "collect",
    "canary",
    "lag",
    "lag replay",
    "slo evaluate",
    "slo backtest",
    "slo rules",
    "dashboards build",
    "check",
]


def test_help_lists_every_command_of_the_design() -> None:
    result = CliRunner().invoke(cli, ["--help"], prog_name="kafka-pulse")
    assert result.exit_code == 0
    for command in DESIGN_COMMANDS:
        assert f"kafka-pulse {command} " in result.output, command


@pytest.mark.parametrize("command", DESIGN_COMMANDS)
def test_every_command_takes_config(command: str) -> None:
    result = CliRunner().invoke(cli, [*command.split(), "--help"])
    assert result.exit_code == 0
    assert "--config" in result.output


def test_dev_status_without_a_cluster_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_PULSE_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["dev", "status"])
    assert result.exit_code == 1
    assert "ClusterError: no dev cluster" in result.output
