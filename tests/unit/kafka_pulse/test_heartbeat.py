"""Who watches the watcher (kafka_pulse/runner/heartbeat.py, kafka_pulse/self_health.py,
kafka_pulse/check/consult/self_check.py): the heartbeat alert is posted every cycle while run's own loops live and
withheld when one died; each component's last success is on /metrics with a stale flag past 3 intervals; `check`
reads that from a real listener (login included) and names the stale component. The process's own /metrics over
HTTP is the one I/O here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from pydantic import SecretStr

from kafka_pulse.check.consult.self_check import judge_self, read_self_health
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import NotAvailable
from kafka_pulse.check.judge.verdict import Status
from kafka_pulse.runner.heartbeat import HEARTBEAT_ALERTNAME, Heartbeat, HeartbeatCollector, SelfHealthCollector
from kafka_pulse.self_health import ComponentHealth, SelfHealth, Watched, parse_self_health
from pulse.alerts import Alert
from pulse.config import HttpConfig
from pulse.config.http import BasicAuthConfig
from pulse.http import HttpServer
from pulse.ports import LOOPBACK, free_ports

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Recorder:
    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.alerts: list[Alert] = []

    def send(self, alerts: Sequence[Alert]) -> Any:
        if self.fail:
            self.fail -= 1
            raise OSError(28, "No space left on device")
        self.alerts += alerts
        return None


def test_the_heartbeat_fires_with_an_end_a_few_cycles_ahead_and_routing_labels() -> None:
    now = [T0]
    sink = Recorder()
    beat = Heartbeat(sink, SelfHealth(), 30, 4, {"team": "kafka"}, clock=lambda: now[0])
    assert beat.beat_once()
    now[0] += timedelta(seconds=30)
    assert beat.beat_once()

    first, second = sink.alerts
    assert first.labels == {"team": "kafka", "alertname": HEARTBEAT_ALERTNAME, "severity": "none"}
    assert (first.starts_at, first.ends_at) == (T0, T0 + timedelta(seconds=120))
    assert (second.starts_at, second.ends_at) == (T0, T0 + timedelta(seconds=150))  # one incident, kept alive
    assert not second.is_resolved(now[0])


def test_the_heartbeat_is_withheld_while_one_of_runs_own_loops_is_dead() -> None:
    sink = Recorder()
    registry = CollectorRegistry()
    dead = [False]
    beat = Heartbeat(
        sink, SelfHealth(), 30, 4, checks=[lambda: "the SLO schedule thread is not running" if dead[0] else None]
    )
    registry.register(HeartbeatCollector(beat))
    assert beat.beat_once()
    dead[0] = True
    assert not beat.beat_once()

    assert len(sink.alerts) == 1
    assert registry.get_sample_value("kafka_pulse_heartbeat_withheld_total") == 1
    assert registry.get_sample_value("kafka_pulse_heartbeat_sent_total") == 1


def test_a_failing_sink_is_counted_and_the_next_beat_goes_out() -> None:
    sink = Recorder(fail=1)
    beat = Heartbeat(sink, SelfHealth(), 30, 4)
    assert not beat.beat_once()
    assert beat.beat_once()
    assert (beat.failures, beat.sent, len(sink.alerts)) == (1, 1, 1)


def test_stale_components_are_named_on_the_heartbeat() -> None:
    health = SelfHealth([Watched("slo_schedule", 60, lambda: T0.timestamp() - 600)], clock=lambda: T0.timestamp())
    sink = Recorder()
    Heartbeat(sink, health, 30, 4, clock=lambda: T0).beat_once()
    assert "slo_schedule: last successful cycle for 600 s" in sink.alerts[0].annotations["stale_components"]


@pytest.mark.parametrize(
    ("interval_s", "age_s", "never", "stale"),
    [
        pytest.param(10, 29, False, False, id="within-3-intervals"),
        pytest.param(10, 31, False, True, id="past-3-intervals"),
        pytest.param(10, 29, True, False, id="never-yet-young"),
        pytest.param(10, 31, True, True, id="never-and-old"),
    ],
)
def test_staleness_is_three_intervals_from_the_last_success_or_the_start(
    interval_s: float, age_s: float, never: bool, stale: bool
) -> None:
    now = 1_000_000.0
    c = ComponentHealth("canary", interval_s, started_s=now - age_s, last_success_s=None if never else now - age_s)
    assert c.is_stale(now) is stale


def test_self_health_round_trips_through_the_exposition_text() -> None:
    now = T0.timestamp()
    clock = [now - 100]  # started 100 s ago
    collectors, lag_reader = Watched("collectors", 15, lambda: now - 5), Watched("lag_reader", 10, lambda: None)
    health = SelfHealth([collectors, lag_reader], clock=lambda: clock[0])
    clock[0] = now
    registry = CollectorRegistry()
    registry.register(SelfHealthCollector(health))
    text = generate_latest(registry).decode()

    assert 'kafka_pulse_component_stale{component="lag_reader"} 1.0' in text
    assert 'kafka_pulse_component_stale{component="collectors"} 0.0' in text
    parsed = {c.component: c for c in parse_self_health(text)}
    assert parsed["collectors"] == ComponentHealth("collectors", 15, now - 100, now - 5)
    assert parsed["lag_reader"].last_success_s is None
    section = judge_self(list(parsed.values()), T0)
    assert (section.status, section.summary) == (Status.WARN, "1 of 2 components stale: lag_reader")
    assert section.reasons == ("lag_reader: no successful cycle for 100 s, more than 3 intervals of 10 s",)


def test_a_component_whose_state_cannot_be_read_counts_as_no_success() -> None:
    def broken() -> float | None:
        raise KeyError("cluster")

    (component,) = SelfHealth([Watched("collectors", 15, broken)]).snapshot()
    assert component.last_success_s is None


def test_check_reads_a_running_listener_behind_its_login() -> None:
    now = T0.timestamp()
    (port,) = free_ports(1)
    password = "s3cret-heartbeat"
    http = HttpConfig(
        listen=f"{LOOPBACK}:{port}", basic_auth=BasicAuthConfig(username="ops", password=SecretStr(password))
    )
    registry = CollectorRegistry()
    registry.register(
        SelfHealthCollector(SelfHealth([Watched("slo_schedule", 60, lambda: now - 500)], clock=lambda: now - 900))
    )
    server = HttpServer.from_config(http, registry).start()
    try:
        facts = read_self_health(http, Deadline.after(5))
        wrong = read_self_health(
            http.model_copy(update={"basic_auth": BasicAuthConfig(username="ops", password=SecretStr("no"))}),
            Deadline.after(5),
        )
    finally:
        server.stop()
    gone = read_self_health(http, Deadline.after(5))

    assert isinstance(facts, list)
    section = judge_self(facts, T0)
    assert section.status is Status.WARN
    assert section.reasons == ("slo_schedule: last successful cycle for 500 s, more than 3 intervals of 60 s",)
    assert judge_self(wrong, T0).status is Status.INFO and "HTTP 401" in judge_self(wrong, T0).reasons[0]
    assert isinstance(gone, NotAvailable) and judge_self(gone, T0).status is Status.INFO
    assert password not in repr(section) + repr(wrong) + repr(gone)
