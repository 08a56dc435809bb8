"""The MirrorMaker 2 config mirror mode is tested against (tests/support/mirrormaker.py), rendered without a JVM; the
real MM2 reads it in tests/integration/canary/test_canary_mirror.py."""

from __future__ import annotations

import pytest

from pulse.errors import ConfigError
from tests.support.mirrormaker import READY_TOPIC, MirrorSpec, mirrored_topic, render_mm2_properties


def parse(text: str) -> dict[str, str]:
    """Java properties as MM2 reads them: `key = value`, one a line."""
    pairs = (line.split("=", 1) for line in text.splitlines() if line.strip())
    return {key.strip(): value.strip() for key, value in pairs}


def spec(**changes: object) -> MirrorSpec:
    fields: dict[str, object] = {
        "source_bootstrap": "127.0.0.1:9092",
        "target_bootstrap": "127.0.0.1:9192,127.0.0.1:9193,127.0.0.1:9194",
        "topics": ("pulse-mirror-canary",),
        "target_brokers": 3,
    }
    return MirrorSpec(**(fields | changes))  # type: ignore[arg-type]


def test_one_way_flow_of_the_monitor_and_readiness_topics() -> None:
    props = parse(render_mm2_properties(spec()))
    assert props["clusters"] == "source, target"
    assert props["source.bootstrap.servers"] == "127.0.0.1:9092"
    assert props["target.bootstrap.servers"] == "127.0.0.1:9192,127.0.0.1:9193,127.0.0.1:9194"
    assert (props["source->target.enabled"], props["target->source.enabled"]) == ("true", "false")
    assert props["source->target.topics"] == f"pulse-mirror-canary, {READY_TOPIC}"
    assert props["replication.policy.class"] == "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
    assert props["source.consumer.auto.offset.reset"] == "earliest"
    assert props["emit.heartbeats.enabled"] == "false"


def test_internal_topics_live_on_the_target_with_its_replication_factor() -> None:
    for brokers, rf in ((1, "1"), (3, "3"), (5, "3")):
        props = parse(render_mm2_properties(spec(target_brokers=brokers)))
        keys = [k for k in props if k.endswith("replication.factor")]
        assert len(keys) == 7
        assert {props[k] for k in keys} == {rf}
        assert props["offset-syncs.topic.location"] == "target"


def test_client_settings_are_prefixed_per_cluster() -> None:
    props = parse(render_mm2_properties(spec(target_client={"security.protocol": "SASL_SSL"})))
    assert props["target.security.protocol"] == "SASL_SSL"
    assert "source.security.protocol" not in props


@pytest.mark.parametrize(
    ("alias", "policy", "want"),
    [("source", "default", "source.canary"), ("dc1", "default", "dc1.canary"), ("dc1", "identity", "canary")],
)
def test_mirrored_topic_name(alias: str, policy: str, want: str) -> None:
    assert mirrored_topic("canary", alias, policy) == want  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"topics": ()}, "MirrorSpec.topics: name at least one source topic to mirror"),
        ({"target_alias": "source"}, "MirrorSpec: source and target alias are both 'source'"),
        ({"source_alias": "a.b"}, "MirrorSpec.source_alias: 'a.b' may only hold letters, digits, _ and -"),
        ({"target_brokers": 0}, "MirrorSpec.target_brokers: must be at least 1, got 0"),
    ],
)
def test_bad_specs_are_refused_with_the_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        spec(**changes)
    assert str(caught.value) == message
