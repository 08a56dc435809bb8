"""The SLO job on `kafka-pulse run`'s schedule, on the test run's SparkSession: one scheduled
evaluation writes the Parquet that `kafka-pulse check` reads its budgets from, serves the budget gauges and the
schedule's own health on the process registry, and hands a firing page to the alert delivery; a failed
evaluation is counted and holds open alerts instead of resolving them.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from pyspark.sql import SparkSession

from kafka_pulse.check.facts import SloFacts
from kafka_pulse.check.judge.verdict import Status, judge_slo
from kafka_pulse.check.probe.slo_budgets import read_parquet
from kafka_pulse.runner.slo_schedule import SloSchedule, SloScheduleCollector
from pulse.alerts import Alert, SendResult
from pulse.config import AlertingConfig, SloConfig
from pulse.ports import wait_until
from slo.alerting import SloAlertDelivery
from slo.model import Slo
from slo.spec import describe, parse_slos
from tests.fixtures.spark import T, at, minutes, write_rows

pytestmark = pytest.mark.integration


class RecordingSender:
    """The alert sink's seam (`pulse.alerts.AlertSender`): keeps every batch, accepts them all."""

    def __init__(self) -> None:
        self.batches: list[list[Alert]] = []

    def send(self, alerts: Sequence[Alert]) -> SendResult:
        self.batches.append(list(alerts))
        return SendResult(len(alerts), 0)


def outage_slo(source: Path) -> list[Slo]:
    """Three hours of one probe a minute before T, the last 30 minutes all failing: a page at 99.9 %."""
    flags = np.ones(180, dtype=bool)
    flags[-30:] = False
    times: list[datetime | None] = list(minutes(at(-180), 180))
    write_rows(source, times, ok=flags)
    spec = {"name": "produce", "labels": {"cluster": "dev"}, "source": {"type": "events", "path": str(source)},
            "good": "ok", "total": "true", "objective": 99.9}  # fmt: skip
    return list(parse_slos([("test", [spec])], source.parent))


def test_a_scheduled_evaluation_feeds_parquet_metrics_and_alerts(spark: SparkSession, tmp_path: Path) -> None:
    slos = outage_slo(tmp_path / "sli")
    sender = RecordingSender()
    settings = SloConfig(results_dir=tmp_path / "results", schedule_s=3600)
    delivery = SloAlertDelivery.from_config(AlertingConfig(), sender, settings.schedule_s)
    schedule = SloSchedule(slos, settings, lambda: spark, False, delivery, describe(slos), clock=lambda: T)
    schedule.start()
    try:
        assert wait_until(lambda: schedule.runs["ok"] + schedule.runs["failed"] >= 1, 300), "no evaluation ran"
    finally:
        schedule.stop()
    assert schedule.runs == {"ok": 1, "failed": 0}, schedule.last_error

    facts = read_parquet(tmp_path / "results")  # what `kafka-pulse check` reads
    assert isinstance(facts, SloFacts) and facts.evaluated_at == T
    (budget,) = facts.budgets
    assert budget.page_firing and budget.budget_remaining is not None and budget.budget_remaining < 0
    verdict = judge_slo(facts, T + timedelta(minutes=1), stale_after_s=180)
    assert verdict.status is Status.CRIT and "produce{cluster=dev}: page alert firing" in verdict.reasons[0]

    registry = CollectorRegistry()
    registry.register(SloScheduleCollector(schedule))
    text = generate_latest(registry).decode()
    assert 'kafka_pulse_slo_schedule_runs_total{result="ok"} 1.0' in text
    assert 'kafka_pulse_slo_alert_firing{cluster="dev",severity="page",slo="produce"} 1.0' in text
    assert "kafka_pulse_slo_schedule_last_success_timestamp_seconds" in text

    (batch,) = sender.batches
    pages = [a for a in batch if a.labels["severity"] == "page"]
    assert [a.labels["slo"] for a in pages] == ["produce"] and pages[0].labels["alertname"] == "KafkaSLOBurnRate"


def test_a_failed_evaluation_is_counted_and_holds_open_alerts(spark: SparkSession, tmp_path: Path) -> None:
    slos = outage_slo(tmp_path / "sli")
    sender = RecordingSender()
    settings = SloConfig(schedule_s=3600)
    delivery = SloAlertDelivery.from_config(AlertingConfig(), sender, settings.schedule_s)
    schedule = SloSchedule(slos, settings, lambda: spark, False, delivery, describe(slos))
    assert schedule.run_once(T)
    opened = [a for a in sender.batches[-1] if a.labels["severity"] == "page"]
    shutil.rmtree(tmp_path / "sli")  # the source goes away
    assert not schedule.run_once(T + timedelta(minutes=1))
    assert schedule.runs == {"ok": 1, "failed": 1}
    assert schedule.last_error is not None and "produce" in schedule.last_error
    held = [a for a in sender.batches[-1] if a.labels["severity"] == "page"]
    assert [a.labels for a in held] == [a.labels for a in opened]  # resent as firing, not resolved
    assert all(a.ends_at is not None and a.ends_at > T + timedelta(minutes=1) for a in held)
