"""pulse/sli_sink/metrics.py: the sink's counters under their docs/metrics.md names, every drop reason present."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from pulse.sli_sink import DROP_REASONS, SliSink, SliSinkCollector
from tests.unit.pulse.sli_sink.test_sink import STREAM, ScriptedDelivery, rows


def test_families_and_reasons(tmp_path: Path) -> None:
    sink = SliSink(tmp_path, ScriptedDelivery(), queue_size=1)
    sink.offer(STREAM, rows(0, 1))
    registry = CollectorRegistry()
    registry.register(SliSinkCollector(sink))
    value = registry.get_sample_value
    assert value("kafka_pulse_sli_sink_events_dropped_total", {"reason": "queue_full"}) == 2
    for reason in DROP_REASONS:
        assert value("kafka_pulse_sli_sink_events_dropped_total", {"reason": reason}) is not None
    assert value("kafka_pulse_sli_sink_events_queued_total") == 0
    assert value("kafka_pulse_sli_sink_events_delivered_total") == 0
    assert value("kafka_pulse_sli_sink_delivery_errors_total") == 0
    assert value("kafka_pulse_sli_sink_pending_events") == 0
    assert value("kafka_pulse_sli_sink_spool_bytes") == 0
    assert value("kafka_pulse_sli_sink_last_delivery_timestamp_seconds") is None
