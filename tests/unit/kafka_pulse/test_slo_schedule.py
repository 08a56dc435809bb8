"""kafka_pulse/runner/slo_schedule.py: no failure of one cycle ends the schedule. The SLO engine is not started
here (its session factory fails, as a Spark that cannot start does); the alert path fails like a sink whose
spool raised before any POST, which used to escape `run_once` and end the schedule's thread for good."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kafka_pulse.runner.slo_schedule import SloSchedule, SloScheduleCollector
from pulse.alerts import Alert, Incidents
from pulse.config import SloConfig
from pulse.polling import poll
from slo.alerting import SloAlertDelivery


class FailingSink:
    """Raises on its first `failures` sends, as AlertSink did when its spool directory had gone."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.sent: list[list[Alert]] = []

    def send(self, alerts: Sequence[Alert]) -> Any:
        if self.failures:
            self.failures -= 1
            raise FileNotFoundError(2, "No such file or directory", "/var/lib/kafka-pulse/alert-spool/spool.lock")
        self.sent.append(list(alerts))
        return None


def no_spark() -> Any:
    raise RuntimeError("Java gateway process exited before sending its port number")


def test_a_cycle_whose_alert_delivery_raises_is_counted_and_the_schedule_keeps_running() -> None:
    sink = FailingSink(failures=2)
    delivery = SloAlertDelivery(sink, Incidents(resend_interval_s=60))
    schedule = SloSchedule([], SloConfig(schedule_s=0.05), no_spark, owns_session=False, delivery=delivery)
    registry = CollectorRegistry()
    registry.register(SloScheduleCollector(schedule))
    schedule.start()
    try:
        poll(lambda: schedule.runs, lambda runs: runs["failed"] >= 4, 30, "4 failed runs", interval_s=0.02)
        assert schedule.is_alive()
    finally:
        schedule.stop()

    assert len(sink.sent) >= 2  # once the sink works again, every cycle hands it the (held) alerts
    assert (registry.get_sample_value("kafka_pulse_slo_schedule_failures_total") or 0) >= 4
    assert registry.get_sample_value("kafka_pulse_slo_schedule_last_success_timestamp_seconds") is None
    assert schedule.last_error is not None and "Java gateway" in schedule.last_error


def test_run_once_never_raises() -> None:
    schedule = SloSchedule([], SloConfig(), no_spark, owns_session=False, delivery=None)
    assert schedule.run_once(datetime.now(UTC)) is False
    assert (schedule.failures, schedule.runs["failed"]) == (1, 1)


def test_a_failed_evaluation_withdraws_the_previous_budget_gauges() -> None:
    """After a failed evaluation /metrics holds no budget gauges of an older one passed off as current: the failure
    is counted (`runs{result="failed"}`) and the last success time stays; before, the last good gauges stayed."""
    from datetime import timedelta

    from slo import output
    from slo.results import AlertResult, SloResult

    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    previous = SloResult(
        name="produce", labels={"cluster": "dev"}, objective=99.9, window="30d", at=at,
        period_start=at - timedelta(days=30), period_end=None, good=990.0, total=1000.0, sli=0.99,
        budget_consumed=0.1, budget_remaining=0.9,
        burn_rates={"1h": 2.0}, alerts=(AlertResult("page", False, ()),), exhaustion_at=None, projected_sli=None,
        projected_at=None, forecast_window="6h", budgeting="occurrences",
    )  # fmt: skip
    schedule = SloSchedule([], SloConfig(), no_spark, owns_session=False, delivery=None)
    schedule._gauges = output.gauges([previous])  # what the last good evaluation published
    schedule.last_success_s = 1_000.0
    registry = CollectorRegistry()
    registry.register(SloScheduleCollector(schedule))
    labels = {"slo": "produce", "cluster": "dev"}
    assert registry.get_sample_value("kafka_pulse_slo_sli_ratio", labels) == 0.99

    assert schedule.run_once(at + timedelta(minutes=1)) is False
    assert registry.get_sample_value("kafka_pulse_slo_sli_ratio", labels) is None
    assert registry.get_sample_value("kafka_pulse_slo_schedule_runs_total", {"result": "failed"}) == 1
    assert registry.get_sample_value("kafka_pulse_slo_schedule_last_success_timestamp_seconds") == 1_000.0
