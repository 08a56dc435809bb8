"""A tiered topic's copy-lag allowance from its configs, as tables: Kafka 4.4's `remote.copy.lag.bytes` when set,
else local retention (4.3 and older have no such config), plus one segment; nothing when nothing bounds it."""

from __future__ import annotations

import pytest

from pulse.kafka.remote_tier import TieredTopic, copy_lag_allowance, read_earliest_local, tiered_topic

MB = 1 << 20


@pytest.mark.parametrize(
    ("configs", "want"),
    [
        pytest.param(
            {"segment.bytes": str(MB), "local.retention.bytes": str(10 * MB), "remote.copy.lag.bytes": str(4 * MB)},
            (5.0 * MB, "remote.copy.lag.bytes"),
            id="4.4-delay-configured",
        ),
        pytest.param(
            {"segment.bytes": str(MB), "local.retention.bytes": str(10 * MB), "remote.copy.lag.bytes": "0"},
            (1.0 * MB, "remote.copy.lag.bytes"),
            id="4.4-no-delay-one-segment",
        ),
        pytest.param(
            {"segment.bytes": str(MB), "local.retention.bytes": str(10 * MB), "remote.copy.lag.bytes": "-1"},
            (11.0 * MB, "local.retention.bytes"),
            id="4.4-derived-from-local-retention",
        ),
        pytest.param(
            {"segment.bytes": str(MB), "local.retention.bytes": str(10 * MB)},
            (11.0 * MB, "local.retention.bytes"),
            id="4.3-no-copy-lag-config",
        ),
        pytest.param(
            {"segment.bytes": str(MB), "local.retention.bytes": "-2", "retention.bytes": str(20 * MB)},
            (21.0 * MB, "retention.bytes"),
            id="local-retention-is-the-whole-retention",
        ),
        pytest.param(
            {"segment.bytes": str(MB), "local.retention.bytes": "-2", "retention.bytes": "-1"},
            (None, "none"),
            id="unlimited-unbounded",
        ),
        pytest.param(
            {"segment.bytes": "junk", "local.retention.bytes": "5"},
            (5.0, "local.retention.bytes"),
            id="unparsable-segment-counts-zero",
        ),
    ],
)
def test_the_allowance_follows_the_topic_configs(configs: dict[str, str], want: tuple[float | None, str]) -> None:
    assert copy_lag_allowance(configs) == want


def test_only_topics_with_remote_storage_enabled_are_tiered() -> None:
    configs = {"remote.storage.enable": "true", "segment.bytes": "10", "local.retention.bytes": "90"}
    assert tiered_topic("t", configs, 3) == TieredTopic("t", 3, 100.0, "local.retention.bytes")
    assert tiered_topic("t", {**configs, "remote.storage.enable": "false"}, 3) is None
    assert tiered_topic("t", {"segment.bytes": "10"}, 3) is None


def test_nothing_asked_is_read_without_a_connection() -> None:
    read = read_earliest_local({"bootstrap_servers": ["127.0.0.1:1"]}, [])
    assert read.offsets == {} and read.reason == ""


def test_an_unreachable_cluster_is_the_reads_reason_never_an_exception() -> None:
    """Nothing listens on the port: the read says why, with no offsets, and raises nothing."""
    from pulse.ports import free_ports

    (port,) = free_ports(1)
    settings = {"bootstrap_servers": [f"127.0.0.1:{port}"], "request_timeout_ms": 500}
    read = read_earliest_local(settings, [("t", 0)])
    assert read.offsets == {} and read.reason.startswith("ListOffsets(earliest local)"), read
