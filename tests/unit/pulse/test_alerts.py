"""pulse/alerts/: the Alert message, Incidents' keep-alive and resolve logic, and the
AlertSink's bounded, ordered, restart-safe spool, against a real loopback HTTP server scripted per test.

Alertmanager itself is exercised in tests/integration/pulse/test_alert_delivery.py.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from pulse.alerts import (
    Alert,
    AlertSink,
    AlertSinkCollector,
    AlertSpool,
    Incidents,
    render_link,
    supersede,
)
from pulse.alerts.spool import SPOOL_FILE
from pulse.config import AlertingConfig, PulseConfig, parse_config
from pulse.errors import ConfigError
from pulse.ports import LOOPBACK, free_ports

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def alert(name: str = "KafkaSLOBurnRate", slo: str = "produce", **annotations: str) -> Alert:
    return Alert(labels={"alertname": name, "slo": slo, "severity": "page"}, annotations=annotations)


# --- a scripted Alertmanager stand-in ------------------------------------------------------------------------------


class ScriptedServer:
    """POST /api/v2/alerts answers the next scripted status (200 when the script is empty) and records the
    alerts of every accepted POST, in arrival order."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.accepted: list[dict[str, Any]] = []
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner.lock:
                    owner.requests += 1
                    status = owner.statuses.pop(0) if owner.statuses else 200
                    if status == 200:
                        owner.accepted.extend(json.loads(body))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server.server_address[1]}"

    def slos(self) -> list[str]:
        return [a["labels"]["slo"] for a in self.accepted]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.stop()


@pytest.fixture
def refused_url() -> str:
    """A loopback URL where nothing listens: connection refused, like a stopped Alertmanager."""
    return f"http://{LOOPBACK}:{free_ports(1)[0]}"


@dataclass
class FakeMonotonic:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def spool_lines(directory: Path) -> list[str]:
    path = directory / SPOOL_FILE
    return path.read_text().splitlines() if path.exists() else []


# --- Alert --------------------------------------------------------------------------------------------------------


def test_alert_serialises_as_alertmanager_postable_alert() -> None:
    a = Alert(
        labels={"alertname": "KafkaSLOBurnRate", "slo": "produce", "group": ""},
        annotations={"burn_rate_1h": "15.2"},
        starts_at=T0,
        ends_at=T0 + timedelta(minutes=4),
        generator_url="http://grafana/d/slo",
    )
    assert a.to_api() == {
        "labels": {"alertname": "KafkaSLOBurnRate", "slo": "produce"},  # empty label dropped, as Alertmanager does
        "annotations": {"burn_rate_1h": "15.2"},
        "startsAt": "2026-03-01T12:00:00Z",
        "endsAt": "2026-03-01T12:04:00Z",
        "generatorURL": "http://grafana/d/slo",
    }
    assert Alert.model_validate(a.to_api()) == a


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"labels": {"slo": "x"}}, "an alert needs a non-empty 'alertname' label", id="no-alertname"),
        pytest.param({"labels": {"alertname": ""}}, "non-empty 'alertname'", id="empty-alertname"),
        pytest.param({"labels": {"alertname": "A", "burn-rate": "1"}}, "label name 'burn-rate' is invalid", id="label"),
        pytest.param(
            {"labels": {"alertname": "A"}, "annotations": {"1h": "x"}}, "annotation name '1h' is invalid", id="annot"
        ),
        pytest.param(
            {"labels": {"alertname": "A"}, "starts_at": T0, "ends_at": T0 - timedelta(seconds=1)},
            "endsAt 2026-03-01T11:59:59+00:00 is before startsAt 2026-03-01T12:00:00+00:00",
            id="ends-before-start",
        ),
        pytest.param(
            {"labels": {"alertname": "A"}, "starts_at": datetime(2026, 3, 1)}, "timezone info", id="naive-time"
        ),
    ],
)
def test_invalid_alerts_are_refused_before_alertmanager_sees_them(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        Alert(**kwargs)


def test_render_link_fills_label_placeholders_url_quoted() -> None:
    labels = {"alertname": "KafkaSLOBurnRate", "slo": "produce p99"}
    assert (
        render_link("https://rb.example/{alertname}#{slo}", labels)
        == "https://rb.example/KafkaSLOBurnRate#produce%20p99"
    )
    assert render_link("https://rb.example/{cluster}", labels) == "https://rb.example/"


# --- supersede ----------------------------------------------------------------------------------------------------


def test_supersede_keeps_the_last_state_of_each_incident_in_place() -> None:
    a1 = alert(slo="a", n="1").model_copy(update={"starts_at": T0})
    b1 = alert(slo="b", n="1").model_copy(update={"starts_at": T0})
    a2 = alert(slo="a", n="2").model_copy(update={"starts_at": T0})
    a_resolved = a2.model_copy(update={"ends_at": T0 + timedelta(minutes=1)})
    a_again = alert(slo="a", n="3").model_copy(update={"starts_at": T0 + timedelta(minutes=2)})  # a new incident

    kept, removed = supersede([a1, b1, a2, a_resolved, a_again])

    assert kept == [b1, a_resolved, a_again]  # the resolve of incident 1 still precedes incident 2
    assert removed == 2


# --- Incidents ----------------------------------------------------------------------------------------------------


def test_an_open_incident_is_resent_with_a_moving_ends_at_and_its_first_starts_at() -> None:
    incidents = Incidents(resend_interval_s=60, keepalive_cycles=4)
    first = incidents.open(alert(burn="20"), T0)
    assert (first.starts_at, first.ends_at) == (T0, T0 + timedelta(minutes=4))

    later = T0 + timedelta(minutes=1)
    again = incidents.open(alert(burn="25"), later)
    assert again.starts_at == T0  # the incident began at T0, not at the latest cycle
    assert again.ends_at == later + timedelta(minutes=4)
    assert again.annotations == {"burn": "25"}  # numbers follow the latest evaluation
    assert incidents.refresh(later + timedelta(minutes=1))[0].ends_at == T0 + timedelta(minutes=6)


def test_close_resolves_with_ends_at_now_and_resends_it_only_during_retention() -> None:
    incidents = Incidents(resend_interval_s=60, resolved_retention_s=300)
    incidents.open(alert(), T0)
    closed_at = T0 + timedelta(minutes=10)

    resolved = incidents.close(alert().labels, closed_at)

    assert resolved is not None
    assert (resolved.starts_at, resolved.ends_at) == (T0, closed_at)
    assert resolved.is_resolved(closed_at)
    assert not incidents.is_open(alert().labels)
    assert incidents.refresh(closed_at + timedelta(seconds=300)) == [resolved]  # retention is inclusive
    assert incidents.refresh(closed_at + timedelta(seconds=301)) == []
    assert incidents.close(alert().labels, closed_at) is None  # nothing open: nothing to resolve


def test_a_reopened_incident_gets_a_new_start_and_its_old_resolve_is_no_longer_resent() -> None:
    incidents = Incidents(resend_interval_s=60)
    incidents.open(alert(), T0)
    incidents.close(alert().labels, T0 + timedelta(minutes=1))

    reopened_at = T0 + timedelta(minutes=2)
    batch = incidents.reconcile([alert()], reopened_at)

    # Alertmanager keeps the last state posted for a label set: the old resolve after the new firing would end it.
    assert [(a.starts_at, a.is_resolved(reopened_at)) for a in batch] == [(reopened_at, False)]


def test_reconcile_closes_only_what_was_evaluated() -> None:
    incidents = Incidents(resend_interval_s=60)
    incidents.reconcile([alert(slo="a"), alert(slo="b"), alert(slo="c")], T0)
    now = T0 + timedelta(minutes=1)

    # This cycle only SLOs a and b were evaluated (c's source was down): c is held open, never resolved.
    batch = incidents.reconcile([alert(slo="a")], now, scope=lambda labels: labels["slo"] in {"a", "b"})

    state = {a.labels["slo"]: a.is_resolved(now) for a in batch}
    assert state == {"a": False, "c": False, "b": True}
    assert [a.labels["slo"] for a in incidents.open_alerts] == ["a", "c"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resend_interval_s": 0}, "resend_interval_s must be > 0"),
        ({"resend_interval_s": 60, "keepalive_cycles": 1}, "keepalive_cycles must be >= 2"),
        ({"resend_interval_s": 60, "resolved_retention_s": -1}, "resolved_retention_s must be >= 0"),
    ],
)
def test_incidents_refuse_settings_that_would_flap(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Incidents(**kwargs)


def test_incidents_from_config_resend_at_least_every_cycle() -> None:
    config = AlertingConfig(resend_interval_s=30, keepalive_cycles=3)
    assert Incidents.from_config(config).lifetime == timedelta(seconds=90)
    assert Incidents.from_config(config, cycle_s=120).lifetime == timedelta(seconds=360)


# --- AlertSink and its spool ----------------------------------------------------------------------------------------


def test_alerts_go_straight_to_alertmanager_when_it_answers(server: ScriptedServer, tmp_path: Path) -> None:
    with AlertSink(server.url, tmp_path) as sink:
        result = sink.send([alert(slo="a"), alert(slo="b")])

    assert (result.delivered, result.spooled) == (2, 0)
    assert server.slos() == ["a", "b"]
    assert spool_lines(tmp_path) == []
    assert sink.stats.sent == 2


@pytest.mark.parametrize("status", [500, 503, 429, 404])
def test_a_failing_alertmanager_spools_and_the_spool_goes_first_later(
    server: ScriptedServer, tmp_path: Path, status: int
) -> None:
    clock = FakeMonotonic()
    with AlertSink(server.url, tmp_path, retry_after_s=10, monotonic=clock) as sink:
        server.statuses = [status]
        first = sink.send([alert(slo="a"), alert(slo="b")])
        clock.now += 10
        second = sink.send([alert(slo="c")])

    assert (first.delivered, first.spooled) == (0, 2)
    assert (second.delivered, second.spooled) == (3, 0)
    assert server.slos() == ["a", "b", "c"]  # in order: spooled alerts before the new one
    assert spool_lines(tmp_path) == []
    assert (sink.stats.failed, sink.stats.spooled, sink.stats.sent) == (2, 2, 3)


def test_after_a_failure_send_spools_without_waiting_on_the_network(server: ScriptedServer, tmp_path: Path) -> None:
    clock = FakeMonotonic()
    with AlertSink(server.url, tmp_path, retry_after_s=10, monotonic=clock) as sink:
        server.statuses = [503]
        sink.send([alert(slo="a")])
        clock.now += 9.9
        paused = sink.send([alert(slo="b")])
        assert server.requests == 1  # no second POST inside the pause
        assert paused.spooled == 2
        flushed = sink.flush()  # an explicit flush does not wait for the pause

    assert (flushed.delivered, flushed.spooled) == (2, 0)
    assert server.slos() == ["a", "b"]


def test_connection_refused_spools_and_a_new_sink_on_the_same_dir_delivers_it(
    refused_url: str, server: ScriptedServer, tmp_path: Path
) -> None:
    clock = FakeMonotonic()
    with AlertSink(refused_url, tmp_path, retry_after_s=10, monotonic=clock) as down:
        for slo in ("a", "b", "c"):
            down.send([alert(slo=slo)])
            clock.now += 10  # past the pause: every send really tries the network, spool first
        assert down.stats.failed == 1 + 2 + 3  # a spooled alert counts again at each failed retry
        assert down.stats.spooled == 3
        assert [a.labels["slo"] for a in down.pending()] == ["a", "b", "c"]

    # A process restart: a new sink on the same directory, Alertmanager back.
    with AlertSink(server.url, tmp_path) as restarted:
        assert restarted.stats.spool_entries == 3
        result = restarted.flush()

    assert (result.delivered, result.spooled) == (3, 0)
    assert server.slos() == ["a", "b", "c"]
    assert spool_lines(tmp_path) == []
    with AlertSink(server.url, tmp_path) as third:
        assert third.flush().delivered == 0  # delivered alerts were truncated, not delivered twice
    assert server.slos() == ["a", "b", "c"]


def test_a_timeout_counts_as_a_failure(tmp_path: Path) -> None:
    # A socket that accepts connections (kernel backlog) but never answers: a hung Alertmanager.
    with socket.socket() as hung:
        hung.bind((LOOPBACK, 0))
        hung.listen(8)
        url = f"http://{LOOPBACK}:{hung.getsockname()[1]}"
        with AlertSink(url, tmp_path, timeout_s=0.2) as sink:
            result = sink.send([alert()])

    assert (result.delivered, result.spooled) == (0, 1)
    assert sink.stats.failed == 1


def test_a_batch_alertmanager_refuses_is_dropped_and_counted_not_retried(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with AlertSink(server.url, tmp_path) as sink:
        server.statuses = [400]
        refused = sink.send([alert(slo="a")])
        after = sink.send([alert(slo="b")])

    assert (refused.delivered, refused.spooled, refused.dropped) == (1, 0, 1)
    assert after.delivered == 1
    assert server.slos() == ["b"]
    assert sink.stats.dropped["rejected"] == 1
    assert "refused 1 alerts: HTTP 400" in caplog.text


def test_keepalives_of_one_incident_are_superseded_while_waiting(
    refused_url: str, server: ScriptedServer, tmp_path: Path
) -> None:
    incidents = Incidents(resend_interval_s=60)
    with AlertSink(refused_url, tmp_path) as down:
        for minute in range(5):
            down.flush()
            down.send(incidents.reconcile([alert(slo="a", burn=str(minute))], T0 + timedelta(minutes=minute)))

    now = T0 + timedelta(minutes=5)
    with AlertSink(server.url, tmp_path) as up:
        result = up.send(incidents.reconcile([], now))  # a resolved in this cycle

    assert result.delivered == 1  # four keep-alives and the firing states are obsolete next to the resolve
    assert server.accepted[0]["endsAt"] == "2026-03-01T12:05:00Z"
    assert down.stats.superseded + up.stats.superseded == 5


def test_an_alert_sent_twice_in_one_batch_waits_once(refused_url: str, tmp_path: Path) -> None:
    same = alert(slo="a")
    with AlertSink(refused_url, tmp_path, max_spool_bytes=1 << 20) as sink:
        sink.send([alert(slo="b")])  # spooled: from here on the spool is rewritten, not appended to
        sink.flush()
        sink.send([same, same])
        sink.flush()
        assert [a.labels["slo"] for a in sink.pending()] == ["b", "a"]


def test_the_spool_is_bounded_dropping_the_oldest_and_counting_them(refused_url: str, tmp_path: Path) -> None:
    one_line = len(json.dumps({"v": 1, "spooled_at": T0.isoformat(), "alert": alert(slo="s000").to_api()})) + 1
    with AlertSink(refused_url, tmp_path, max_spool_bytes=10 * one_line + 5) as sink:
        for index in range(25):
            sink.flush()
            sink.send([alert(slo=f"s{index:03d}")])
        kept = [a.labels["slo"] for a in sink.pending()]

    assert kept == [f"s{index:03d}" for index in range(15, 25)]  # the newest ten
    assert (tmp_path / SPOOL_FILE).stat().st_size <= 10 * one_line + 5
    assert sink.stats.dropped["overflow"] == 15
    assert sink.stats.spool_entries == 10


def test_corrupt_spool_lines_are_reported_by_line_number_and_skipped(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = [json.dumps({"v": 1, "spooled_at": T0.isoformat(), "alert": alert(slo=s).to_api()}) for s in "abc"]
    bad_alert = json.dumps({"v": 1, "alert": {"labels": {"slo": "no-name"}}})
    (tmp_path / SPOOL_FILE).write_text("\n".join([good[0], "{not json", good[1], bad_alert, good[2], '{"v": 1, "al']))

    with caplog.at_level(logging.ERROR), AlertSink(server.url, tmp_path) as sink:
        result = sink.flush()

    assert server.slos() == ["a", "b", "c"]
    assert (result.delivered, result.dropped) == (3, 3)
    assert sink.stats.dropped["corrupt"] == 3
    assert f"{tmp_path / SPOOL_FILE}: line 2 skipped: JSONDecodeError" in caplog.text
    assert "line 4 skipped: ValidationError" in caplog.text
    assert "line 6 skipped: incomplete line (no newline): a write was cut off" in caplog.text
    assert spool_lines(tmp_path) == []


def test_an_append_after_a_torn_line_is_not_swallowed_by_it(tmp_path: Path) -> None:
    spool = AlertSpool(tmp_path, max_bytes=1 << 20)
    spool.append([alert(slo="a")], T0)
    with open(spool.path, "ab") as handle:
        handle.write(b'{"v": 1, "alert": {"lab')  # a crash in the middle of a write

    spool.append([alert(slo="b")], T0)

    contents = spool.read()
    assert [a.labels["slo"] for a in contents.alerts] == ["a", "b"]
    assert [c.line_no for c in contents.corrupt] == [2]


def test_a_spool_that_cannot_be_written_loses_the_alerts_counted_but_never_raises(
    refused_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / SPOOL_FILE).mkdir()  # any write to the spool file fails, even as root (like a full disk)
    with AlertSink(refused_url, tmp_path) as sink:
        result = sink.send([alert(slo="a"), alert(slo="b")])

    assert (result.delivered, result.dropped) == (0, 2)
    assert sink.stats.dropped["spool_error"] == 2
    assert sink.stats.spooled == 0
    assert f"alert spool {tmp_path / SPOOL_FILE}: cannot read" in caplog.text
    assert sink.stats.spool_errors == 3  # the read at start, the read and the write of `send`


def test_a_rewrite_keeps_when_each_alert_was_first_spooled(refused_url: str, tmp_path: Path) -> None:
    with AlertSink(refused_url, tmp_path) as sink:
        sink.send([alert(slo="a")])
        first = json.loads(spool_lines(tmp_path)[0])["spooled_at"]
        sink.flush()  # a failed delivery rewrites the spool
        sink.flush()

    assert [json.loads(line)["spooled_at"] for line in spool_lines(tmp_path)] == [first]


def test_two_sinks_on_one_directory_never_interleave_lines(refused_url: str, tmp_path: Path) -> None:
    sinks = [AlertSink(refused_url, tmp_path, retry_after_s=3600) for _ in range(2)]
    for sink in sinks:
        sink.send([alert(slo=f"warmup{id(sink)}")])  # fail once: from here on both only append

    def write(sink: AlertSink, prefix: str) -> None:
        for index in range(40):
            sink.send([alert(slo=f"{prefix}{index}", text="x" * 2000)])

    threads = [threading.Thread(target=write, args=(sink, p)) for sink, p in zip(sinks, "pq", strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = sinks[0].spool.read()
    for sink in sinks:
        sink.close()

    assert contents.corrupt == []
    slos = [a.labels["slo"] for a in contents.alerts]
    assert len(slos) == 82
    assert [s for s in slos if s.startswith("p")] == [f"p{i}" for i in range(40)]


def test_sink_metrics_are_exported_from_a_registry_we_pass_in(refused_url: str, tmp_path: Path) -> None:
    registry = CollectorRegistry()
    with AlertSink(refused_url, tmp_path) as sink:
        registry.register(AlertSinkCollector(sink))
        sink.send([alert(slo="a"), alert(slo="b")])

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("kafka_pulse_alerts_failed_total") == 2
    assert value("kafka_pulse_alerts_spooled_total") == 2
    assert value("kafka_pulse_alerts_sent_total") == 0
    assert value("kafka_pulse_alerts_dropped_total", reason="overflow") == 0
    assert value("kafka_pulse_alert_spool_entries") == 2
    assert (value("kafka_pulse_alert_spool_bytes") or 0) > 0
    assert value("kafka_pulse_alerts_last_success_timestamp_seconds") is None  # never reached Alertmanager


# --- AlertingConfig ------------------------------------------------------------------------------------------------


def refusal(alerting: dict[str, Any]) -> str:
    text = json.dumps({"alerting": {"enabled": True, "alertmanager_url": "http://127.0.0.1:9093", **alerting}})
    with pytest.raises(ConfigError) as excinfo:
        parse_config(text, "pulse.yaml", {})
    return str(excinfo.value)


@pytest.mark.parametrize(
    ("alerting", "message"),
    [
        ({"spool_max_bytes": 1000}, "pulse.yaml: alerting.spool_max_bytes: "),
        ({"timeout_s": 0}, "pulse.yaml: alerting.timeout_s: "),
        ({"keepalive_cycles": 1}, "pulse.yaml: alerting.keepalive_cycles: "),
        ({"resend_interval_s": -5}, "pulse.yaml: alerting.resend_interval_s: "),
        (
            {"labels": {"team-name": "kafka"}},
            "pulse.yaml: alerting.labels.team-name: 'team-name' is not a label name",
        ),
        (
            {"labels": {"severity": "page"}},
            "pulse.yaml: alerting.labels.severity: 'severity' is set by the component raising the alert, not here",
        ),
        ({"labels": {"team": ""}}, "pulse.yaml: alerting.labels.team: empty value: Alertmanager drops empty labels"),
        (
            {"runbook_url": "runbooks/{slo}"},
            "pulse.yaml: alerting.runbook_url: 'runbooks/{slo}' is not an http(s) URL template",
        ),
        (
            {"runbook_url": "https://rb.example/{slo name}"},
            "pulse.yaml: alerting.runbook_url: 'https://rb.example/{slo name}': {slo name} is not a label placeholder",
        ),
    ],
)
def test_invalid_alerting_config_is_refused_naming_the_key(alerting: dict[str, Any], message: str) -> None:
    assert message in refusal(alerting)


def test_alerting_config_resolves_the_spool_dir_against_the_config_file(tmp_path: Path) -> None:
    text = "alerting: {enabled: true, alertmanager_url: 'http://127.0.0.1:9093', spool_dir: spool}"
    config: PulseConfig = parse_config(text, "pulse.yaml", {}, base_dir=tmp_path)
    assert config.alerting.spool_dir == tmp_path / "spool"
    with AlertSink.from_config(config.alerting, state_dir=tmp_path / "state") as sink:
        assert sink.spool.directory == tmp_path / "spool"
    with AlertSink.from_config(config.alerting.model_copy(update={"spool_dir": None}), tmp_path / "state") as sink:
        assert sink.spool.directory == tmp_path / "state" / "alert-spool"
