"""The `audit` config section: one valid config with every key set, broken one key at a time; each row names the
exact message line (`<file>: <key path>: <reason>`), after Sloth's validation tables."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from pulse.config import parse_config
from pulse.errors import ConfigError


def valid_config() -> dict[str, Any]:
    return {
        "clusters": [
            {"name": "prod", "bootstrap_servers": ["kafka1:9092"]},
            {"name": "monitoring", "bootstrap_servers": ["kafka9:9092"]},
        ],
        "audit": {
            "enabled": True,
            "cluster": "prod",
            "topics": ["orders", "payments"],
            "groups": ["billing", "fraud-detection.v2"],
            "interval_s": 15,
            "grace_s": 10,
            "max_wait_s": 900,
            "lookback_s": 600,
            "timeout_s": 10,
            "log": {"enabled": True, "dir": "/var/lib/kp/audit", "flush_interval_s": 30, "max_bytes": 1 << 30},
        },
    }


def with_key(path: str, value: Any) -> dict[str, Any]:
    config = valid_config()
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return config


def test_the_valid_config_loads() -> None:
    config = parse_config(yaml.safe_dump(valid_config()), "pulse.yaml", {})
    assert config.audit.topics == ["orders", "payments"] and config.audit.log.flush_interval_s == 30
    assert parse_config("{}", "pulse.yaml", {}).audit.enabled is False


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        pytest.param("audit.cluster", "nowhere", "audit.cluster: no cluster named 'nowhere' is configured", id="cl"),
        pytest.param("audit.cluster", KeyError, "audit.cluster: 2 clusters are configured; name the audited", id="2"),
        pytest.param("audit.topics", [], "audit.topics: required when the audit is enabled", id="no-topics"),
        pytest.param("audit.groups", [], "audit.groups: required when the audit is enabled", id="no-groups"),
        pytest.param("audit.topics", ["a/b"], "audit.topics[0]: 'a/b' is not a Kafka topic name", id="topic"),
        pytest.param("audit.topics", ["a", "a"], "audit.topics[1]: duplicate topic 'a' (also topics[0])", id="dup"),
        pytest.param("audit.groups", ["g\n"], "audit.groups[0]: 'g\\n' holds a control character", id="group-ctl"),
        pytest.param("audit.groups", ["x" * 256], "audit.groups[0]: String should have at most 255", id="group-long"),
        pytest.param("audit.interval_s", 120, "audit.interval_s: Input should be less than or equal to 60", id="iv"),
        pytest.param("audit.max_wait_s", 30, "audit.max_wait_s: Input should be greater than or equal to 60", id="w"),
        pytest.param("audit.log.enabled", False, "audit.log.enabled: the audit's rows would go nowhere", id="nowhere"),
        pytest.param("audit.since_ms", 1, "audit: unknown key 'since_ms'; known keys: enabled, cluster,", id="unknown"),
    ],
)
def test_one_broken_key(path: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(yaml.safe_dump(with_key(path, value)), "pulse.yaml", {})
    assert f"pulse.yaml: {message}" in str(refused.value)


def test_the_rows_may_go_to_the_sli_sink_alone() -> None:
    config = with_key("audit.log.enabled", False) | {"sli_sink": {"enabled": True, "cluster": "monitoring"}}
    assert parse_config(yaml.safe_dump(config), "pulse.yaml", {}).audit.log.enabled is False


def test_the_reconciliation_loads_with_or_without_the_broker_side_audit() -> None:
    reconcile = {"enabled": True, "deadline_s": 1500, "trigger_s": 30, "counted_groups": ["billing"]}
    config = with_key("audit.reconcile", reconcile)
    loaded = parse_config(yaml.safe_dump(config), "pulse.yaml", {}).audit.reconcile
    assert (loaded.deadline_s, loaded.counted_groups) == (1500, ["billing"])
    alone = {"audit": {"reconcile": {"enabled": True, "deadline_s": 60}}}
    assert parse_config(yaml.safe_dump(alone), "pulse.yaml", {}).audit.reconcile.deadline_s == 60


@pytest.mark.parametrize(
    ("reconcile", "message"),
    [
        pytest.param(
            {"enabled": True, "deadline_s": 900},
            "audit.reconcile.deadline_s: reconcile.deadline_s (900) must exceed max_wait_s (900)",
            id="deadline-before-the-audit-settles",
        ),
        pytest.param(
            {"counted_groups": ["g", "g"]},
            "audit.reconcile.counted_groups[1]: duplicate group 'g' (also groups[0])",
            id="dup-counted",
        ),
        pytest.param(
            {"deadline_s": 10}, "audit.reconcile.deadline_s: Input should be greater than or equal to 60", id="short"
        ),
    ],
)
def test_a_broken_reconcile_key(reconcile: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(yaml.safe_dump(with_key("audit.reconcile", reconcile)), "pulse.yaml", {})
    assert f"pulse.yaml: {message}" in str(refused.value)
