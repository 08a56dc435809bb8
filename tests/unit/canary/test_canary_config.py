"""The `canary:` config section: defaults, and one broken key at a time with its exact message."""

from typing import Any

import pytest
import yaml

from pulse.config import CanaryConfig, parse_config
from tests.support.config_edits import refusal_lines


def canary(**section: Any) -> CanaryConfig:
    return parse_config(yaml.safe_dump({"canary": section}), "pulse.yaml", {}).canary


def test_defaults() -> None:
    config = CanaryConfig()
    assert config.interval_s == 1.0
    assert config.replication_factor is None  # min(3, brokers) at creation
    assert config.min_insync_replicas is None  # RF - 1
    assert config.partitions_per_broker == 1.0
    assert config.manage_topic is True
    assert config.closest_replica_probe is False
    assert config.listen is None


def test_a_full_section_parses() -> None:
    config = canary(
        cluster="prod",
        topic="canary-az",
        interval_s=0.5,
        client_rack="az-a",
        replication_factor=3,
        min_insync_replicas=2,
        partitions_per_broker=2,
        manage_topic=False,
        latency_slo_s=1.5,
        loss_deadline_s=10,
        availability_window_s=30,
        connection_check_interval_s=5,
        closest_replica_probe=True,
        listen="127.0.0.1:9309",
    )
    assert (config.min_insync_replicas, config.partitions_per_broker, config.listen) == (2, 2.0, "127.0.0.1:9309")


@pytest.mark.parametrize(
    ("section", "want"),
    [
        pytest.param(
            {"replication_factor": 0},
            "pulse.yaml: canary.replication_factor: Input should be greater than or equal to 1 (got 0)",
            id="rf-zero",
        ),
        pytest.param(
            {"replication_factor": 2, "min_insync_replicas": 3},
            "pulse.yaml: canary.min_insync_replicas: 3 is more than replication_factor 2: no acks=all probe could "
            "ever succeed",
            id="min-isr-above-rf",
        ),
        pytest.param(
            {"partitions_per_broker": 0},
            "pulse.yaml: canary.partitions_per_broker: Input should be greater than 0 (got 0)",
            id="ratio-zero",
        ),
        pytest.param(
            {"latency_slo_s": 5, "loss_deadline_s": 2},
            "pulse.yaml: canary.loss_deadline_s: 2 s is shorter than latency_slo_s 5 s: a probe would count as lost "
            "before a read-back as slow as the produce SLO allows",
            id="loss-deadline-before-slo",
        ),
        pytest.param(
            {"latency_slo_s": 5, "delivery_timeout_s": 2},
            "pulse.yaml: canary.delivery_timeout_s: 2 s is shorter than latency_slo_s 5 s: probes would be given up "
            "before they could be judged",
            id="delivery-timeout-before-slo",
        ),
        pytest.param(
            {"interval_s": 10, "availability_window_s": 5},
            "pulse.yaml: canary.availability_window_s: 5 s is shorter than interval_s 10 s: the window would often "
            "hold no probe at all",
            id="window-shorter-than-interval",
        ),
        pytest.param(
            {"closest_replica_probe": True},
            "pulse.yaml: canary.client_rack: closest_replica_probe needs client_rack: the broker picks the replica "
            "in the client's rack",
            id="closest-replica-without-rack",
        ),
        pytest.param(
            {"listen": "9309"},
            "pulse.yaml: canary.listen: '9309' is not host:port (e.g. kafka1:9092)",
            id="listen-not-host-port",
        ),
        pytest.param(
            {"connection_check_timeout_s": -1},
            "pulse.yaml: canary.connection_check_timeout_s: Input should be greater than 0 (got -1)",
            id="check-timeout-negative",
        ),
        pytest.param({"manage_topics": False}, "pulse.yaml: canary: unknown key 'manage_topics'", id="misspelt-key"),
    ],
)
def test_bad_canary_settings_are_refused_naming_the_key(section: dict[str, Any], want: str) -> None:
    assert refusal_lines({"canary": section})[0].startswith(want)
