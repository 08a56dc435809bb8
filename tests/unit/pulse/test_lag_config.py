"""The `lag` config section: one valid config with every lag key set, broken one key at a time; each
row names the exact message line (`<file>: <key path>: <reason>`), after Sloth's validation tables."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from lag.assembly import LagRunner
from lag.service import rule_params
from pulse.config import PulseConfig, parse_config
from tests.support.config_edits import Case, Edit, refusal_lines, set_key


def valid_config() -> dict[str, Any]:
    return {
        "clusters": [
            {"name": "prod", "bootstrap_servers": ["kafka1:9092"]},
            {"name": "legacy", "bootstrap_servers": ["kafka9:9092"]},
        ],
        "lag": {
            "mode": "burrow",
            "intervals": 15,
            "offset_refresh_s": 30,
            "min_distance_s": 1,
            "allowed_lag": 1,
            "minimum_complete": 0.5,
            "expire_group_s": 86400,
            "hwm_history": 120,
            "stale_after_s": 120,
            "recovery_s": 60,
            "group_allow": "^app-",
            "group_deny": "^console-consumer-",
            "ingestion": "consumer_offsets",
            "ingestion_by_cluster": {"legacy": "admin"},
            "group_offsets_refresh_s": 20,
            "exact_time_lag": {"enabled": True, "interval_s": 15, "max_fetches_per_cycle": 50},
            "page_cache": {"enabled": True, "size_bytes": 32 << 30, "record_bytes": 512},
            "notify": {"enabled": True, "severity": "WARN", "interval_s": 30},
            "listen": "127.0.0.1:8000",
            "switch_interval_s": 0.0005,
        },
        "alerting": {"enabled": True, "alertmanager_url": "http://127.0.0.1:9093"},
    }


def parse(tree: dict[str, Any]) -> PulseConfig:
    return parse_config(yaml.safe_dump(tree), "pulse.yaml", {})


def test_valid_lag_config_parses_and_becomes_settings() -> None:
    config = parse(valid_config())
    lag = config.lag
    assert lag.ingestion_for("legacy") == "admin" and lag.ingestion_for("prod") == "consumer_offsets"
    assert (lag.mode, lag.intervals, lag.offset_refresh_s, lag.min_distance_s) == ("burrow", 15, 30, 1)
    assert (lag.effective_group_allow(), lag.group_deny, lag.effective_group_refresh_s()) == (
        "^app-",
        "^console-consumer-",
        20,
    )
    rules = rule_params(lag)
    assert (rules.allowed_lag, rules.minimum_complete, rules.offset_refresh_ms) == (1, 0.5, 30_000)
    assert lag.switch_interval_s == 0.0005


def test_defaults_derive_staleness_from_the_refresh_intervals() -> None:
    lag = parse({"lag": {"offset_refresh_s": 5, "group_offsets_refresh_s": 20}}).lag
    assert (lag.effective_stale_after_s(), lag.effective_recovery_s()) == (60.0, 15.0)
    default = PulseConfig().lag
    assert (default.mode, default.ingestion, default.exact_time_lag.enabled, default.page_cache.enabled) == (
        "enhanced",
        "consumer_offsets",
        False,
        False,
    )
    assert default.effective_group_allow() is None  # ".*" is no filter


def test_the_whole_config_builds_a_runner_without_connecting() -> None:
    """Validate with the code that runs: the runner is composed (nothing started, nothing connected)."""
    config = parse(valid_config())
    runner = LagRunner(config, config.clusters, sender=None)
    assert [s.ingestion for s in runner.sources] == ["consumer_offsets", "admin"]
    assert runner.health.unavailable_reason("legacy", 0) == "no HWM read yet"
    assert len(runner.fetchers) == 2
    assert runner.api.modules.consumers["legacy"]["class-name"] == "admin"


_REDOS_TAIL = (
    "which can backtrack for seconds on one hostile name; rewrite"
    " it without that (a character class such as [a-z0-9.-]+, or a possessive quantifier such as ++)"
)


def _lag(*path: str, value: Any) -> Edit:
    """Sets the key at `path` under `lag:`."""
    return set_key("lag", *path, value=value)


def _off(section: str) -> Edit:
    def apply(tree: dict[str, Any]) -> None:
        del tree["alerting"]
        tree["lag"]["notify"]["enabled"] = section == "notify"

    return apply


CASES = [
    # Bounds: pydantic names the limit and the value given.
    *(
        pytest.param(
            Case(_lag(*key.split("."), value=value), f"lag.{key}: Input should be {limit} (got {value})"), id=name
        )
        for name, key, value, limit in [
            ("intervals-too-small", "intervals", 1, "greater than or equal to 2"),
            ("intervals-too-large", "intervals", 300, "less than or equal to 255"),
            ("minimum-complete-above-1", "minimum_complete", 1.5, "less than or equal to 1"),
            ("allowed-lag-negative", "allowed_lag", -1, "greater than or equal to 0"),
            ("exact-lag-unbounded", "exact_time_lag.max_fetches_per_cycle", 0, "greater than or equal to 1"),
            ("switch-interval-longer-than-100-ms", "switch_interval_s", 0.5, "less than or equal to 0.1"),
            ("switch-interval-zero", "switch_interval_s", 0, "greater than 0"),
            ("group-name-bound-zero", "max_group_name_bytes", 0, "greater than or equal to 1"),
            ("group-name-bound-past-kafkas", "max_group_name_bytes", 40_000, "less than or equal to 32767"),
            ("group-count-bound-zero", "max_groups", 0, "greater than or equal to 1"),
            ("group-count-bound-unbounded", "max_groups", 10**9, "less than or equal to 100000000"),
        ]
    ),
    # Choices, formats and rules across keys: the message says what is wrong and how to fix it.
    pytest.param(
        Case(
            _lag("stale_after_s", value=25),
            "lag.stale_after_s: 25 s must be longer than the slowest refresh (30 s), or every cluster would turn "
            "unknown between two refreshes",
        ),
        id="stale-shorter-than-refresh",
    ),
    pytest.param(
        Case(
            _lag("ingestion", value="zookeeper"),
            "lag.ingestion: Input should be 'consumer_offsets' or 'admin' (got 'zookeeper')",
        ),
        id="unknown-ingestion",
    ),
    pytest.param(
        Case(
            _lag("ingestion_by_cluster", value={"staging": "admin"}),
            "lag.ingestion_by_cluster.staging: no cluster named 'staging' is configured (clusters: prod, legacy)",
        ),
        id="ingestion-for-an-unknown-cluster",
    ),
    pytest.param(
        Case(
            _lag("page_cache", "window_s", value=600),
            "lag.page_cache: give exactly one of window_s or size_bytes when the page-cache hint is enabled",
        ),
        id="page-cache-both-sources",
    ),
    pytest.param(
        Case(
            _lag("page_cache", value={"enabled": True}),
            "lag.page_cache: give exactly one of window_s or size_bytes when the page-cache hint is enabled",
        ),
        id="page-cache-no-source",
    ),
    pytest.param(
        Case(
            _lag("notify", "severity", value="STOP"),
            "lag.notify.severity: Input should be 'WARN' or 'ERR' (got 'STOP')",
        ),
        id="notify-severity-not-a-group-status",
    ),
    pytest.param(
        Case(
            _off("notify"),
            "lag.notify.enabled: lag.notify is enabled but alerting is not; set alerting.enabled and "
            "alerting.alertmanager_url",
        ),
        id="notify-without-alerting",
    ),
    pytest.param(
        Case(_lag("listen", value="8000"), "lag.listen: '8000' is not host:port (e.g. kafka1:9092)"),
        id="listen-not-host-port",
    ),
    pytest.param(
        Case(
            _lag("group_allow", value="[app"),
            "lag.group_allow: '[app' is not a valid regular expression: unterminated character set at position 0",
        ),
        id="allow-regex",
    ),
    # Filters that could backtrack for seconds on one hostile group name (ReDoS).
    *(
        pytest.param(Case(_lag(key, value=pattern), f"lag.{key}: {pattern!r} {why}, {_REDOS_TAIL}"), id=name)
        for name, key, pattern, why in [
            ("allow-nested-plus", "group_allow", "^(a+)+$", "nests a quantifier inside another quantifier"),
            ("deny-nested-star", "group_deny", "(a*)*", "nests a quantifier inside another quantifier"),
            ("allow-nested-in-group", "group_allow", "^app-(?:x+y)*$", "nests a quantifier inside another quantifier"),
            ("allow-nested-bounded", "group_allow", "(a{2,9}){3}", "nests a quantifier inside another quantifier"),
            ("allow-dot-star-star", "group_allow", "(.*)*", "nests a quantifier inside another quantifier"),
            ("deny-same-alternatives", "group_deny", "^(a|a)*$", "repeats alternatives that can begin alike"),
            ("deny-any-alternative", "group_deny", "(x|.)+", "repeats alternatives that can begin alike"),
            ("allow-class-alternatives", "group_allow", "([a-c]x|b)+", "repeats alternatives that can begin alike"),
        ]
    ),
    pytest.param(
        Case(
            _lag("exact_time_lag", "enable", value=True),
            "lag.exact_time_lag: unknown key 'enable'; did you mean 'enabled'?",
        ),
        id="typo-in-a-subsection",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_invalid_lag_config_is_refused_naming_the_key(case: Case) -> None:
    tree = valid_config()
    case.breaks(tree)
    assert refusal_lines(tree) == ["pulse.yaml: " + case.want]


@pytest.mark.parametrize(
    "pattern",
    ["^app-", "^(foo|bar)+$", "(ab|ac)*", "^[a-z]+(?:-[a-z]++)*$", "(?>a+)*", "a{2,5}", "^(a|b|c)+$", ".*"],
)
def test_linear_filter_patterns_still_load(pattern: str) -> None:
    """The refusal is conservative but not blind: alternatives that begin apart, possessive or atomic inner
    quantifiers and a single quantifier load as before."""
    tree = valid_config()
    tree["lag"]["group_allow"] = pattern
    assert parse(tree).lag.group_allow == pattern


def test_bounds_default_to_a_kib_and_a_million_groups() -> None:
    lag = PulseConfig().lag
    assert (lag.max_group_name_bytes, lag.max_groups) == (1024, 1_000_000)
