"""`collectors.clients` validation, after tests/unit/pulse/test_config.py: one valid section,
broken one key at a time, each row the exact message line the operator sees."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pulse.config import PulseConfig, parse_config
from pulse.errors import ConfigError

ENVIRON = {"JMX_PASSWORD": "jmx-secret"}


def valid() -> dict[str, Any]:
    return {
        "collectors": {
            "transport": "jpype",
            "clients": [
                {"name": "orders-producer", "host": "app1", "port": 9999, "cluster": "prod"},
                {
                    "name": "mm2-dr",
                    "host": "mm2",
                    "port": 9998,
                    "username": "monitor",
                    "password": "${JMX_PASSWORD}",
                    "ssl": True,
                    "truststore": "trust.p12",
                    "truststore_password": "${JMX_PASSWORD}",
                    "timeout_s": 10,
                },
            ],
        }
    }


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "trust.p12").write_bytes(b"\x30\x82")
    return tmp_path


def parse(tree: dict[str, Any], base_dir: Path) -> PulseConfig:
    return parse_config(yaml.safe_dump(tree), "pulse.yaml", ENVIRON, base_dir=base_dir)


def test_valid_clients_parse_with_defaults_and_secrets(files: Path) -> None:
    clients = parse(valid(), files).collectors.clients
    assert [c.name for c in clients] == ["orders-producer", "mm2-dr"]
    first, second = clients
    assert (first.timeout_s, first.ssl, first.username, first.cluster) == (5.0, False, None, "prod")
    assert second.password is not None and second.password.get_secret_value() == "jmx-secret"
    assert second.truststore == files / "trust.p12"  # relative to the config file's directory
    assert "jmx-secret" not in repr(second)


def test_no_clients_by_default() -> None:
    assert parse_config("{}", "pulse.yaml", {}).collectors.clients == []


def _set(index: int, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(tree: dict[str, Any]) -> None:
        tree["collectors"]["clients"][index][key] = value

    return apply


def _drop(index: int, key: str) -> Callable[[dict[str, Any]], None]:
    def apply(tree: dict[str, Any]) -> None:
        del tree["collectors"]["clients"][index][key]

    return apply


def _duplicate(tree: dict[str, Any]) -> None:
    clients = tree["collectors"]["clients"]
    clients.append(copy.deepcopy(clients[0]) | {"port": 9000})


P = "pulse.yaml: collectors.clients"
CASES = [
    pytest.param(_duplicate, f"{P}[2].name: duplicate client name 'orders-producer' (also clients[0])", id="dup-name"),
    pytest.param(_drop(0, "name"), f"{P}[0].name: required key is missing", id="no-name"),
    pytest.param(_drop(0, "port"), f"{P}[0].port: required key is missing", id="no-port"),
    pytest.param(
        _set(0, "port", 70000), f"{P}[0].port: Input should be less than or equal to 65535 (got 70000)", id="port-range"
    ),
    pytest.param(
        _set(0, "name", "orders producer"),
        f"{P}[0].name: 'orders producer' may only contain letters, digits, '_', '.' and '-'",
        id="name-space",
    ),
    pytest.param(
        _set(0, "cluster", "prod/eu"),
        f"{P}[0].cluster: 'prod/eu' may only contain letters, digits, '_', '.' and '-'",
        id="cluster-slash",
    ),
    pytest.param(_drop(1, "username"), f"{P}[1].username: required when password is set", id="password-alone"),
    pytest.param(_drop(1, "password"), f"{P}[1].password: required when username is set", id="username-alone"),
    pytest.param(
        _set(1, "ssl", False),
        f"{P}[1].ssl: set ssl: true to use a trust store (JMX over TLS)",
        id="truststore-without-ssl",
    ),
    pytest.param(
        _set(1, "truststore", "missing.p12"),
        f"{P}[1].truststore: file '{{dir}}/missing.p12' does not exist",
        id="truststore-missing",
    ),
    pytest.param(
        _set(1, "timeout_s", 0), f"{P}[1].timeout_s: Input should be greater than 0 (got 0)", id="timeout-zero"
    ),
    pytest.param(_set(0, "prot", 1), f"{P}[0]: unknown key 'prot'; did you mean 'port'?", id="typo"),
]


@pytest.mark.parametrize(("breaks", "want"), CASES)
def test_one_broken_key_one_message(breaks: Callable[[dict[str, Any]], None], want: str, files: Path) -> None:
    tree = valid()
    breaks(tree)
    with pytest.raises(ConfigError) as excinfo:
        parse(tree, files)
    assert str(excinfo.value).splitlines() == [want.format(dir=files)]


def test_an_unset_password_variable_is_named_and_its_value_never_echoed(files: Path) -> None:
    tree = valid()
    tree["collectors"]["clients"][1]["password"] = "${UNSET_JMX_PASSWORD}"
    with pytest.raises(ConfigError) as excinfo:
        parse(tree, files)
    assert str(excinfo.value) == f"{P}[1].password: environment variable UNSET_JMX_PASSWORD is not set"
