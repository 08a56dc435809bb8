"""Notifications through the real Alertmanager: a real group on the Kafka 4.3 cluster stops
while records keep coming; the lag notifier opens an incident, `pulse.alerts.AlertSink` posts it and Alertmanager
notifies its webhook (firing); the group comes back and catches up, the incident is resolved and Alertmanager
notifies the resolution. Labels carry identity only; the numbers are annotations.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from devstack.alertmanager import Alertmanager
from lag.assembly import KafkaLagSource
from lag.notify.incidents import ALERTNAME, LagNotifier
from lag.protocol import Status
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.alerts import AlertSink
from pulse.config import AlertingConfig, LagConfig
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.services import WEBHOOK_PATH
from tests.integration.devstack.test_dev_cluster import produce
from tests.support.receiver import HttpReceiver, ReceivedRequest

pytestmark = pytest.mark.integration

CLUSTER = "local"
GROUP = "notify-stopped"


def webhook(state: str) -> Any:
    def matches(request: ReceivedRequest) -> bool:
        body = request.json
        return (
            request.path == WEBHOOK_PATH
            and isinstance(body, dict)
            and any(
                a.get("status") == state and a["labels"].get("group") == GROUP and a["labels"]["alertname"] == ALERTNAME
                for a in body.get("alerts", [])
            )
        )

    return matches


def test_a_stopped_group_opens_an_incident_and_its_recovery_resolves_it(
    kafka: KafkaHandle, alertmanager: Alertmanager, http_receiver: HttpReceiver, tmp_path: Any
) -> None:
    topic = kafka.create_topic("lag-notify", partitions=1)
    consumer = kafka.consumer(GROUP)
    health = SourceHealth(stale_after_s=10.0, recovery_s=0.0)
    service = LagService(LagConfig(mode="enhanced", intervals=3, offset_refresh_s=1.0, group_allow="^notify-"), health)
    source = KafkaLagSource(CLUSTER, kafka.client_config(), service, health)
    alerting = AlertingConfig(
        enabled=True, alertmanager_url=alertmanager.url, resend_interval_s=2, labels={"team": "kafka"}
    )
    sink = AlertSink.from_config(alerting, tmp_path)
    notifier = LagNotifier.from_config(service, alerting, Status.ERR, interval_s=1.0, sender=sink)
    mark = http_receiver.mark()
    hwm = 0
    try:
        source.start()
        notifier.start()
        for offset in (5, 10):  # two commits, then the consumer stops while producers go on
            produce(kafka, topic, 20, f"a{offset}")
            hwm += 20
            commit_offsets(consumer, [TopicPartition(topic, 0, offset)])
            time.sleep(1.0)  # the group's commit cadence

        def status_while_producing() -> Any:  # the GroupStatus, shown whole if the wait times out
            nonlocal hwm
            status = service.group_status(CLUSTER, GROUP)
            if status.status is not Status.ERR:
                produce(kafka, topic, 5, "more")
                hwm += 5
            return status

        # records keep arriving at the producers' pace (one batch a second) until the group is judged ERR
        poll(status_while_producing, lambda s: s.status is Status.ERR, 60, f"{GROUP} ERR", 1.0)

        fired = http_receiver.wait_for(webhook("firing"), timeout_s=60, after=mark)
        alert = next(a for a in fired.json["alerts"] if a["labels"]["group"] == GROUP)
        assert alert["labels"] == {
            "alertname": ALERTNAME, "severity": "page", "cluster": CLUSTER, "group": GROUP, "team": "kafka",
        }  # fmt: skip
        assert alert["annotations"]["status"] == "ERR" and "STOP" in alert["annotations"]["reason"]
        assert int(alert["annotations"]["totallag"]) > 0

        commit_offsets(consumer, [TopicPartition(topic, 0, hwm)])  # back, and caught up
        http_receiver.wait_for(webhook("resolved"), timeout_s=60, after=mark)
        assert service.group_status(CLUSTER, GROUP).status is Status.OK
        assert sink.stats.sent >= 2 and not any(sink.stats.dropped.values()), sink.stats
    finally:
        notifier.stop()
        source.stop()
        sink.close()
        consumer.close()
