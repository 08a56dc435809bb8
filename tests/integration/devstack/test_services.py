"""The real service stack the other integration tests stand on: Prometheus, Alertmanager, Pushgateway, ZooKeeper,
Burrow and the PagerDuty/webhook stand-in, each exercised through the path kafka-pulse uses in production."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from devstack.alertmanager import Alertmanager
from devstack.prometheus import Prometheus, ScrapeTarget
from devstack.pushgateway import Pushgateway
from devstack.services import LocalService, QueryFailed
from pulse.errors import ConfigError, ProcessFailed
from pulse.ports import free_ports, is_listening
from pulse.process import pid_alive
from tests.fixtures.services import PUSHGATEWAY_JOB, WEBHOOK_PATH, BurrowFactory
from tests.support.receiver import HttpReceiver, ReceivedRequest
from tests.support.zookeeper import ZooKeeper

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    """A name no other test in the session uses, since the services are shared."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def webhook_alertnames(request: ReceivedRequest) -> set[str]:
    """The alertnames in an Alertmanager webhook notification; empty for any other request."""
    body = request.json
    if request.path != WEBHOOK_PATH or not isinstance(body, dict):
        return set()
    return {alert["labels"].get("alertname", "") for alert in body.get("alerts", [])}


def test_prometheus_scrapes_a_metric_pushed_to_the_pushgateway(
    prometheus: Prometheus, pushgateway: Pushgateway
) -> None:
    job = unique("pulse_test_")
    pushgateway.push(job, '# TYPE pulse_test_value gauge\npulse_test_value{slo="canary"} 42.5\n')
    try:
        prometheus.wait_for_target_up(PUSHGATEWAY_JOB, timeout_s=30)
        result = prometheus.wait_for_query(f'pulse_test_value{{job="{job}"}}', timeout_s=30)
    finally:
        pushgateway.delete(job)

    assert len(result) == 1
    assert result[0]["metric"]["slo"] == "canary"  # honor_labels kept the pushed labels
    assert float(result[0]["value"][1]) == pytest.approx(42.5)


def test_prometheus_reports_bad_promql_as_query_failed(prometheus: Prometheus) -> None:
    with pytest.raises(QueryFailed, match="parse error"):
        prometheus.query("rate(up[5x])")


def test_alertmanager_delivers_a_posted_alert_to_webhook_and_pagerduty(
    alertmanager: Alertmanager, http_receiver: HttpReceiver
) -> None:
    name = unique("PulsePosted")
    mark = http_receiver.mark()

    alertmanager.post_alerts(
        [{"labels": {"alertname": name, "severity": "page"}, "annotations": {"summary": "posted by a test"}}]
    )

    webhook = http_receiver.wait_for(lambda r: name in webhook_alertnames(r), timeout_s=20, after=mark)
    assert webhook.method == "POST"
    assert webhook.json["status"] == "firing"
    assert webhook.json["alerts"][0]["annotations"]["summary"] == "posted by a test"
    event = http_receiver.wait_for(
        lambda r: r.path == "/v2/enqueue" and name in r.body.decode(errors="replace"), timeout_s=20, after=mark
    )
    assert event.json["event_action"] == "trigger"
    assert event.json["routing_key"]
    assert name in {a["labels"]["alertname"] for a in alertmanager.alerts()}


def test_an_always_firing_rule_reaches_the_receiver_through_alertmanager(
    prometheus: Prometheus, alertmanager: Alertmanager, http_receiver: HttpReceiver, tmp_path: Path
) -> None:
    name = unique("PulseAlwaysFiring")
    rules = tmp_path / "always.yml"
    rules.write_text(
        "groups:\n"
        "  - name: pulse-test\n"
        "    rules:\n"
        f"      - alert: {name}\n"
        "        expr: vector(1)\n"
        "        labels: {severity: ticket}\n"
        "        annotations: {summary: always firing}\n"
    )
    mark = http_receiver.mark()

    with prometheus.extended(rule_files=[rules]):
        request = http_receiver.wait_for(lambda r: name in webhook_alertnames(r), timeout_s=25, after=mark)
        held = alertmanager.wait_for_alert(name, timeout_s=5)

    alert = next(a for a in request.json["alerts"] if a["labels"]["alertname"] == name)
    assert alert["labels"]["severity"] == "ticket"
    assert alert["status"] == "firing"
    assert held["status"]["state"] == "active"


def test_promtool_refuses_a_rule_file_before_prometheus_starts(tmp_path: Path) -> None:
    rules = tmp_path / "broken.yml"
    rules.write_text("groups:\n  - name: broken\n    rules:\n      - alert: Broken\n        expr: rate(up[5x])\n")
    service = Prometheus(tmp_path / "prometheus", rule_files=[rules])

    with pytest.raises(ConfigError, match="promtool check config"):
        service.start()
    assert service.process is None  # never launched


def test_zookeeper_answers_four_letter_words(zookeeper: ZooKeeper) -> None:
    assert zookeeper.four_letter_word("ruok") == "imok"
    assert "Mode: standalone" in zookeeper.four_letter_word("srvr")


def test_burrow_without_kafka_fails_with_its_error_and_log(burrow_factory: BurrowFactory) -> None:
    (dead_port,) = free_ports(1)  # nothing listens there

    with pytest.raises(ProcessFailed) as failure:
        burrow_factory([f"127.0.0.1:{dead_port}"], cluster="nokafka")

    message = str(failure.value)
    assert "Burrow for cluster 'nokafka'" in message
    assert "run out of available brokers" in message  # Burrow's own error line, first
    assert "exited with status 1" in message  # and the process runner's account with the log tail
    assert "Burrow failed at" in message


def test_http_receiver_answers_like_pagerduty_and_records_everything(http_receiver: HttpReceiver) -> None:
    mark = http_receiver.mark()
    with httpx.Client(base_url=http_receiver.url, trust_env=False) as client:
        enqueue = client.post("/v2/enqueue", json={"event_action": "trigger", "dedup_key": "k-1"})
        other = client.put("/anything?x=1", content=b"not json")

    assert enqueue.status_code == 202
    assert enqueue.json() == {"status": "success", "message": "Event processed", "dedup_key": "k-1"}
    assert other.status_code == 200
    got = http_receiver.wait_for(lambda r: r.method == "PUT", timeout_s=5, after=mark)
    assert (got.path, got.body, got.json) == ("/anything?x=1", b"not json", None)
    assert http_receiver.requests[mark].json == {"event_action": "trigger", "dedup_key": "k-1"}


def test_stopped_services_leave_no_process_and_no_listener(tmp_path: Path) -> None:
    receiver = HttpReceiver().start()
    pushgateway = Pushgateway(tmp_path / "pg")
    alertmanager = Alertmanager(tmp_path / "am", webhook_url=receiver.url + WEBHOOK_PATH)
    prometheus = Prometheus(tmp_path / "prom", targets=[ScrapeTarget("pg", (pushgateway.address,), honor_labels=True)])
    zookeeper = ZooKeeper(tmp_path / "zk")
    services: list[LocalService] = [pushgateway, alertmanager, prometheus, zookeeper]
    try:
        for service in services:
            service.start()
        running = {service.name: (service.pid, service.port) for service in services}
        assert all(pid_alive(pid) and is_listening(port) for pid, port in running.values()), running
    finally:
        for service in reversed(services):
            service.stop()
        receiver_port = receiver.port
        receiver.stop()

    assert {name: pid_alive(pid) for name, (pid, _) in running.items()} == dict.fromkeys(running, False)
    assert {name: is_listening(port) for name, (_, port) in running.items()} == dict.fromkeys(running, False)
    assert not is_listening(receiver_port)
