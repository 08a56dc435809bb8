"""The audit in `run`: a cycle that raises (Kafka away, a timeout, a bug) is counted on /metrics and the next one
runs; settled minutes are counted by completeness; stop closes the clients. The cycles come from a stand-in of
the `Cycles` seam (no Kafka: the real cycle is tests/integration/audit/)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException
from prometheus_client import CollectorRegistry, generate_latest

from audit.minutes import MinuteAudit
from audit.service import MAX_ERROR_CHARS, AuditCollector, AuditService


class Script:
    """Plays back outcomes: an exception is raised, a list returned."""

    def __init__(self, *outcomes: list[MinuteAudit] | Exception) -> None:
        self.outcomes = list(outcomes)
        self.seen: list[int] = []
        self.closed = False

    def cycle(self, now_ms: int) -> list[MinuteAudit]:
        self.seen.append(now_ms)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def close(self) -> None:
        self.closed = True


def test_failed_cycles_are_counted_and_the_next_one_runs() -> None:
    settled = [MinuteAudit("g", "t", 0, 5, 5, 61_000), MinuteAudit("h", "t", 0, 5, 1, None)]
    script = Script(KafkaException(KafkaError(KafkaError._TRANSPORT)), TimeoutError("offsets"), settled, KeyError("x"))
    service = AuditService(lambda: script, 15.0, clock=lambda: 1_800_000_000.5)
    service._audit = script  # connected, without starting the loop's thread
    assert [service.run_once() for _ in range(4)] == [False, False, True, False]
    assert script.seen == [1_800_000_000_500] * 4
    assert service.cycles == {"ok": 1, "failed": 3}
    assert service.minutes == {True: 1, False: 1}
    registry = CollectorRegistry()
    registry.register(AuditCollector(service))
    text = generate_latest(registry).decode()
    assert 'kafka_pulse_audit_cycles_total{result="failed"} 3.0' in text
    assert 'kafka_pulse_audit_cycles_total{result="ok"} 1.0' in text
    assert 'kafka_pulse_audit_minutes_settled_total{complete="false"} 1.0' in text
    assert "kafka_pulse_audit_last_cycle_timestamp_seconds 1.8000000005e+09" in text
    assert "kafka_pulse_audit_log_" not in text  # no Parquet log configured
    service.stop()
    assert script.closed


def test_before_start_a_cycle_does_nothing() -> None:
    service = AuditService(Script, 15.0)
    assert service.run_once() is False and service.cycles == {"ok": 0, "failed": 0}


def test_a_failed_cycle_is_logged_bounded_and_escaped(caplog: pytest.LogCaptureFixture) -> None:
    hostile = "broker says\nINFO forged line " + "x" * 2000
    script = Script(KafkaException(KafkaError(KafkaError._TRANSPORT, hostile)))
    service = AuditService(lambda: script, 15.0)
    service._audit = script
    with caplog.at_level(logging.WARNING, logger="audit.service"):
        assert service.run_once() is False
    (line,) = [r.getMessage() for r in caplog.records]
    assert "\n" not in line and "\\nINFO forged line" in line
    assert len(line) < MAX_ERROR_CHARS + 40
