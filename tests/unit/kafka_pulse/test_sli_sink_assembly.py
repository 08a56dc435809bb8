"""kafka_pulse/runner/assembly.py's `add_sli_sink`: one sink per process, its spool under the command's name, its
families on the registry, and its part ahead of the components publishing through it (started first, stopped
last). Nothing is started: no Kafka is needed."""

from __future__ import annotations

from pathlib import Path

from kafka_pulse.runner.assembly import Assembly, add_sli_sink
from pulse.config import PulseConfig

CLUSTERS = [
    {"name": "prod", "bootstrap_servers": ["127.0.0.1:9"]},
    {"name": "mon", "bootstrap_servers": ["127.0.0.1:8"]},
]


def test_the_sink_is_built_under_the_commands_spool_and_registered(tmp_path: Path) -> None:
    config = PulseConfig.model_validate({"clusters": CLUSTERS, "sli_sink": {"enabled": True, "cluster": "mon"}})
    assembly = Assembly(config.http)
    add_sli_sink(assembly, config, config.cluster("mon"), "canary", tmp_path)
    sink = assembly.sli_sink
    assert sink is not None
    assert sink.spool_dir == tmp_path / "sli-spool" / "canary"
    assert [p.name for p in assembly.parts.parts] == ["http", "sli-sink"]
    assert assembly.registry.get_sample_value("kafka_pulse_sli_sink_events_queued_total") == 0
    assert "sli-sink" not in [p.name for p in assembly.described()]


def test_nothing_is_built_when_the_sink_is_off(tmp_path: Path) -> None:
    config = PulseConfig.model_validate({"clusters": CLUSTERS[:1]})
    assembly = Assembly(config.http)
    add_sli_sink(assembly, config, config.cluster(), "run", tmp_path)
    assert assembly.sli_sink is None
    assert [p.name for p in assembly.parts.parts] == ["http"]
