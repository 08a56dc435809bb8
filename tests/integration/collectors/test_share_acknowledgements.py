"""Share consumers' acknowledgement outcomes on a real 4.x broker's JMX (4.4.0 by default) (KIP-1103): a librdkafka
share consumer in explicit mode accepts, releases and rejects records, and each outcome is counted in
`kafka_server_sharegroupmetrics_recordacknowledgements_total{ackType}` (the MBean
`kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=...`, confirmed here), summed over the
brokers; the share-fetch meters (`BrokerTopicMetrics` `TotalShareFetchRequestsPerSec`) count its fetches."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import AcknowledgeType, Message, ShareConsumer

from collectors.mapping import Family
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.integration.collectors.test_collectors import produce, scrape_all
from tests.integration.pulse.test_share_groups import start_at_earliest

pytestmark = pytest.mark.integration

ACKS = "kafka_server_sharegroupmetrics_recordacknowledgements"
FETCHES = "kafka_server_brokertopicmetrics_totalsharefetchrequests"


def by_ack_type(families: dict[str, Family]) -> dict[str, float]:
    """The acknowledgement counter summed over brokers, per ackType."""
    out: dict[str, float] = {}
    for s in families[ACKS].samples:
        kind = dict(s.labels)["ackType"]
        out[kind] = out.get(kind, 0.0) + s.value
    return out


def test_accepted_released_and_rejected_records_are_counted_per_ack_type(kafka: KafkaHandle) -> None:
    before = scrape_all(kafka, "jpype")
    # one meter per AcknowledgeType, registered at broker start (before any share fetch): present on every 4.x broker
    assert set(by_ack_type(before)) == {"Accept", "Release", "Reject", "Renew"}
    topic = kafka.create_topic("share-acks", partitions=1)
    group = f"acks-{uuid.uuid4().hex[:8]}"
    produce(kafka, topic, 30)
    start_at_earliest(kafka, group)
    consumer = ShareConsumer(kafka.client_config(**{"group.id": group, "share.acknowledgement.mode": "explicit"}))
    consumer.subscribe([topic])
    got: list[Message] = []

    def acquired() -> int:
        got.extend(consumer.poll(0.5) or [])
        return len(got)

    try:
        poll(acquired, lambda n: n >= 9, 90, "9 records acquired")
        outcome = {
            "Accept": AcknowledgeType.ACCEPT,
            "Release": AcknowledgeType.RELEASE,
            "Reject": AcknowledgeType.REJECT,
        }
        sent = {kind: 0 for kind in outcome}
        for i, message in enumerate(got):
            kind = list(outcome)[i % 3]
            consumer.acknowledge(message, outcome[kind])
            sent[kind] += 1
        consumer.commit_sync()
    finally:
        consumer.close()

    def counted() -> dict[str, float]:
        after = by_ack_type(scrape_all(kafka, "jpype"))
        return {k: after.get(k, 0.0) - by_ack_type(before).get(k, 0.0) for k in sent}

    deltas = poll(counted, lambda d: all(d[k] >= sent[k] for k in sent), 60, f"acknowledgements {sent} counted")
    assert deltas == {k: float(n) for k, n in sent.items()}, (deltas, sent)
    fetches = scrape_all(kafka, "jpype")[FETCHES].samples
    assert sum(s.value for s in fetches) > sum(s.value for s in before[FETCHES].samples)
