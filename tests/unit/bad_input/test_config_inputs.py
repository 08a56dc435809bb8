"""Hostile config files (pulse/config/load.py, pulse/envsubst.py's bounded YAML loader): one row per class of bad
input, each refused with a ConfigError naming the file and the problem, exit 2 (`check`: 3, UNKNOWN), no traceback,
and quickly: an alias bomb or a 5,000-level document is refused before anything walks it.

Commands run in-process (click's CliRunner); nothing here needs a server, because every row is refused before a
component starts.
"""

from __future__ import annotations

import base64
import json
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kafka_pulse.cli.main import cli
from pulse.http.auth import BasicAuth, is_authorized


def alias_bomb() -> str:
    """About 350 bytes that expand to 9^10 values (the billion laughs)."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def alias_chain(levels: int) -> str:
    """Each anchor one list deeper than the last: shallow as written, `levels` deep once expanded."""
    return "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, levels))


@dataclass(frozen=True)
class Case:
    text: str
    message: str
    """A part of the one-line ConfigError the file must get."""


CASES = [
    pytest.param(Case(alias_bomb(), "more than 250,000 values once its aliases are expanded"), id="alias-bomb"),
    pytest.param(Case("a: &a [*a]\n", "refused: recursive alias: a value contains itself"), id="recursive-list"),
    pytest.param(Case("a: &a {b: *a}\n", "refused: recursive alias"), id="recursive-mapping"),
    pytest.param(Case("a: " + "[" * 5000 + "]" * 5000 + "\n", "refused: nested deeper than 64 levels"), id="deep-flow"),
    pytest.param(Case("a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n", "nested deeper than 64"), id="deep-map"),
    pytest.param(Case(alias_chain(200), "nested deeper than 64 levels once its aliases are expanded"), id="deep-alias"),
    pytest.param(
        Case("lag:\n  offset_refresh_s: .inf\n", "lag.offset_refresh_s: Input should be a finite number"), id="inf"
    ),
    pytest.param(
        Case("lag:\n  offset_refresh_s: .nan\n", "lag.offset_refresh_s: Input should be a finite number"), id="nan"
    ),
    pytest.param(Case("lag:\n  min_distance_s: -.inf\n", "lag.min_distance_s: Input should be a finite"), id="-inf"),
    pytest.param(
        Case("canary:\n  partitions_per_broker: .inf\n", "partitions_per_broker: Input should be a finite"),
        id="inf-ratio",
    ),
    pytest.param(
        Case("slo:\n  schedule_s: 1e12\n", "slo.schedule_s: 1e+12 s is longer than 2678400 s (31 days)"),
        id="interval-too-long",
    ),
    pytest.param(
        Case("alerting:\n  spool_max_bytes: 1e15\n", "alerting.spool_max_bytes: Input should be"), id="size-too-large"
    ),
    pytest.param(
        Case(
            "lag:\n  exact_time_lag: {cache_size: 10000000000}\n",
            "lag.exact_time_lag.cache_size: Input should be less than or equal",
        ),
        id="cache-too-large",
    ),
    pytest.param(
        Case(
            "http:\n  basic_auth: {username: ops, password: ''}\n",
            "http.basic_auth.password: is empty; an empty password is a login anyone can guess",
        ),
        id="empty-password",
    ),
    pytest.param(Case("\tclusters: []\n", "YAML syntax error"), id="tab"),
    pytest.param(Case("- a\n- b\n", "the top level must be a mapping"), id="list-at-top"),
    pytest.param(
        Case("slo:\n  spark_master: 2024-13-45\n", "a value cannot be read: month must be in 1..12"),
        id="impossible-date",
    ),
    pytest.param(
        Case("lag:\n  intervals: !!int ten\n", "a value cannot be read: invalid literal for int()"),
        id="bad-explicit-tag",
    ),
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pulse.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def assert_refused(result: Result, path: Path, message: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert f"{path}: " in result.output and message in result.output, result.output


@pytest.mark.parametrize("case", CASES)
def test_a_command_refuses_the_file_with_exit_2(case: Case, tmp_path: Path) -> None:
    path = write(tmp_path, case.text)
    result = CliRunner().invoke(cli, ["run", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("ConfigError: "), result.output
    assert_refused(result, path, case.message)


@pytest.mark.parametrize("case", CASES)
def test_check_answers_unknown_with_exit_3(case: Case, tmp_path: Path) -> None:
    path = write(tmp_path, case.text)
    result = CliRunner().invoke(cli, ["check", "--config", str(path), "--json"])
    assert result.exit_code == 3, result.output
    assert '"status": "UNKNOWN"' in result.output
    assert_refused(result, path, json.dumps(case.message)[1:-1])  # as the JSON report escapes it


def test_basic_auth_header_without_a_colon_never_logs_in() -> None:
    # `ops` with an empty password is refused in the config; the header parser must also never read a
    # colon-less credential as (user, "") and let it match.
    login = BasicAuth("ops", "")
    for raw in (b"ops", b"ops:", b""):
        header = "Basic " + base64.b64encode(raw).decode()
        assert is_authorized(header, login) is (raw == b"ops:")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_check_answers_unknown_when_loading_the_config_spent_the_budget(tmp_path: Path) -> None:
    # A valid config that takes longer to parse than the budget leaves (1 s, minus the exit reserve and the
    # 0.5 s a probe needs): probes asked now would all time out, which is a false CRIT.
    padding = "# padding\n" * 200_000
    text = f"clusters:\n  - name: big\n    bootstrap_servers: ['127.0.0.1:{closed_port()}']\n{padding}"
    path = write(tmp_path, text)
    result = CliRunner().invoke(cli, ["check", "--config", str(path), "--json", "--timeout", "1"])
    assert result.exit_code == 3, result.output
    assert '"status": "UNKNOWN"' in result.output
    assert "loading the config took" in result.output and "nothing was asked" in result.output
    assert "Traceback" not in result.output
