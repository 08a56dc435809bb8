"""`kafka-pulse lag replay`: input validation with line numbers, and the exact Burrow /lag `status` shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kafka_pulse.cli.main import cli

GOOD = [
    {"t": 1000, "type": "broker", "cluster": "c", "topic": "a", "partition": 0, "offset": 100},
    {"t": 1000, "type": "broker", "cluster": "c", "topic": "a", "partition": 1, "offset": 50},
    {"t": 2000, "type": "commit", "cluster": "c", "group": "g", "topic": "a", "partition": 1, "offset": 20},
    {"t": 3000, "type": "evaluate", "cluster": "c", "group": "g"},
]


def invoke(tmp_path: Path, lines: list[str], *options: str) -> Result:
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return CliRunner().invoke(cli, ["lag", "replay", "--input", str(path), *options])


def test_burrow_mode_prints_the_lag_status_object_with_placeholders(tmp_path: Path) -> None:
    result = invoke(tmp_path, [json.dumps(x) for x in GOOD], "--mode", "burrow")
    assert result.exit_code == 0, result.output
    [line] = result.stdout.splitlines()
    partition1 = {
        "topic": "a", "partition": 1, "owner": "", "client_id": "", "status": "OK",
        "start": {"offset": 20, "timestamp": 2000, "observedAt": 2000, "lag": 30},
        "end": {"offset": 20, "timestamp": 2000, "observedAt": 2000, "lag": 30},
        "current_lag": 30, "complete": 0.1,
    }  # fmt: skip
    placeholder = {
        "topic": "a", "partition": 0, "owner": "", "client_id": "", "status": "OK", "start": None, "end": None,
        "current_lag": 0, "complete": 0.0,
    }  # fmt: skip
    # one commit 1 s ago: window span 0 < silence 1 s and no HWM sample <= 20, so no broker grace: Burrow says
    # STOP (vector V14) and the group ERR; partition 0 is a placeholder (never committed) and counts as incomplete
    partition1["status"] = "STOP"
    assert json.loads(line) == {
        "cluster": "c", "group": "g", "status": "ERR", "complete": 0.0,
        "partitions": [placeholder, partition1], "partition_count": 2, "maxlag": partition1, "totallag": 30,
    }  # fmt: skip


def test_burrow_12_has_no_observed_at(tmp_path: Path) -> None:
    result = invoke(tmp_path, [json.dumps(x) for x in GOOD], "--mode", "burrow-1.2")
    status = json.loads(result.stdout)
    assert "observedAt" not in status["partitions"][1]["end"]
    assert "reason" not in status


def test_enhanced_adds_reason_and_time_lag(tmp_path: Path) -> None:
    result = invoke(tmp_path, [json.dumps(x) for x in GOOD])
    status = json.loads(result.stdout)
    assert status["status"] == "OK"
    assert status["partitions"][1]["reason"].startswith("E4 warm-up")
    assert "lag_seconds" in status["partitions"][1]


def test_unknown_group_is_notfound(tmp_path: Path) -> None:
    result = invoke(tmp_path, [json.dumps({"t": 1, "type": "evaluate", "cluster": "c", "group": "nobody"})])
    assert json.loads(result.stdout)["status"] == "NOTFOUND"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"t": 1, "type": "offset"}', "'type' must be one of broker, commit, evaluate, got 'offset'"),
        ('{"type": "evaluate", "cluster": "c", "group": "g"}', "'t' must be a non-negative integer"),
        (
            '{"t": 5, "type": "commit", "cluster": "c", "group": "g", "topic": "a", "partition": 0}',
            "commit line without 'offset'",
        ),
        ('{"t": 5, "type": "broker", "cluster": "c", "topic": "a", "partition": -1, "offset": 3}', "'partition'"),
        ('{"t": 5, "type": "broker", "cluster": "c", "topic": "a", "partition": 0, "offset": "3"}', "'offset'"),
        ('{"t": true, "type": "evaluate", "cluster": "c", "group": "g"}', "'t' must be"),
        ('{"t": 5, "type": "evaluate", "cluster": "", "group": "g"}', "'cluster' must be a non-empty string"),
    ],
)
def test_malformed_line_is_reported_with_its_number_and_skipped(tmp_path: Path, bad: str, message: str) -> None:
    lines = [json.dumps(x) for x in GOOD]
    lines.insert(2, bad)  # line 3
    result = invoke(tmp_path, lines)
    assert result.exit_code == 1
    assert f"in.jsonl:3: {message}" in result.stderr
    assert "ReplayInputInvalid: 1 malformed line(s) skipped" in result.stderr
    assert len(result.stdout.splitlines()) == 1  # the evaluation after the bad line still ran


def test_missing_input_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["lag", "replay", "--input", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert "ConfigError: --input" in result.output


def test_options_are_validated(tmp_path: Path) -> None:
    result = invoke(tmp_path, ["{}"], "--minimum-complete", "2")
    assert result.exit_code == 2
    assert "ConfigError: --minimum-complete: lag.minimum_complete: Input should be less than" in result.output


@pytest.mark.parametrize(
    ("option", "value", "key"),
    [
        ("--intervals", "1", "intervals"),
        ("--intervals", "256", "intervals"),
        ("--offset-refresh", "0", "offset_refresh_s"),
        ("--min-distance", "-1", "min_distance_s"),
        ("--allowed-lag", "-1", "allowed_lag"),
        ("--minimum-complete", "1.5", "minimum_complete"),
    ],
)
def test_an_option_is_refused_with_the_config_files_message(tmp_path: Path, option: str, value: str, key: str) -> None:
    """One declaration per setting: the option is validated by the `lag:` model, so it says what the file says."""
    config = tmp_path / "pulse.yaml"
    config.write_text(f"lag:\n  {key}: {value}\n")
    from_file = CliRunner().invoke(cli, ["lag", "--config", str(config)])
    from_option = invoke(tmp_path, ["{}"], option, value)
    assert (from_file.exit_code, from_option.exit_code) == (2, 2)
    file_line = from_file.output.strip().removeprefix(f"ConfigError: {config}: ")
    option_line = from_option.output.strip().removeprefix(f"ConfigError: {option}: ")
    assert file_line.startswith(f"lag.{key}: ")
    assert option_line == file_line


def test_intervals_1_is_refused_as_in_the_config_file(tmp_path: Path) -> None:
    """The drift the config model ended: `--intervals 1` was accepted while `lag.intervals: 1` was refused."""
    result = invoke(tmp_path, ["{}"], "--intervals", "1")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "ConfigError: --intervals: lag.intervals: Input should be greater than or equal to 2 (got 1)"
    )


def test_replay_takes_its_settings_from_the_config_and_options_override(tmp_path: Path) -> None:
    """`--config` gives the `lag:` section (here burrow-1.2 rules); an option overrides its key."""
    config = tmp_path / "pulse.yaml"
    config.write_text("lag:\n  mode: burrow-1.2\n  intervals: 3\n")
    lines = [json.dumps(x) for x in GOOD]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    from_config = CliRunner().invoke(cli, ["lag", "replay", "--config", str(config), "--input", str(path)])
    assert from_config.exit_code == 0, from_config.output
    assert "observedAt" not in from_config.stdout and "reason" not in from_config.stdout
    overridden = CliRunner().invoke(
        cli, ["lag", "replay", "--config", str(config), "--input", str(path), "--mode", "enhanced"]
    )
    assert json.loads(overridden.stdout)["partitions"][1]["reason"].startswith("E4 warm-up")


def test_option_help_shows_the_models_defaults() -> None:
    result = CliRunner().invoke(cli, ["lag", "replay", "--help"])
    assert result.exit_code == 0
    assert "[default: 10]" in result.output and "Overrides lag.intervals." in result.output


def test_lag_service_without_config_or_dev_cluster_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_PULSE_HOME", str(tmp_path))
    monkeypatch.delenv("KAFKA_PULSE_CONFIG", raising=False)
    result = CliRunner().invoke(cli, ["lag"])
    assert result.exit_code == 1
    assert result.output.startswith("ClusterError: no dev cluster")


def test_lag_service_refuses_a_bad_config_before_starting(tmp_path: Path) -> None:
    config = tmp_path / "pulse.yaml"
    config.write_text("lag:\n  intervals: 1\n")
    result = CliRunner().invoke(cli, ["lag", "--config", str(config)])
    assert result.exit_code == 2
    assert f"ConfigError: {config}: lag.intervals: Input should be greater than or equal to 2" in result.output
