"""Lag's offset reads survive timeouts on a real cluster. With librdkafka 2.16, an Admin ListOffsets that hits its
request timeout while the answer is on its way aborts the process in native code (lag/ingest/admin_clients.py): three
`kafka-pulse lag` processes died so on the 10,000-partition cluster. Lag now reads offsets through a consumer's
`offsets_for_times`; here it is driven into hundreds of timed-out rounds, and its HWM source through failing
rounds and client renewals, in a child process (a native abort would kill pytest itself), which must exit
cleanly, report the failures as failures, and still read the right offsets afterwards."""

from __future__ import annotations

import pytest

from tests.fixtures.kafka import KafkaHandle
from tests.support.child import run_child

pytestmark = pytest.mark.integration

PARTITIONS = 60

CHILD = """
import json, sys, time
from confluent_kafka import OFFSET_END, Consumer, KafkaException
import lag.ingest.hwm, lag.ingest.offsets_topic
from pulse.kafka.offsets import read_offsets
from lag.service import LagService
from lag.store.freshness import SourceHealth
from lag.assembly import KafkaLagSource
from pulse.config import LagConfig

boot, topic, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
tps = [(topic, p) for p in range(partitions)]
consumer = Consumer({"bootstrap.servers": boot, "group.id": "offsets-timeouts", "log_level": 0})
timed_out = answered = 0
deadline = time.monotonic() + 2
while time.monotonic() < deadline:  # timeouts of 1-20 ms: most rounds end while answers are on their way
    for timeout in (0.001, 0.005, 0.01, 0.02):
        try:
            read_offsets(consumer, tps, OFFSET_END, timeout)
            answered += 1
        except KafkaException:
            timed_out += 1
ends = read_offsets(consumer, tps, OFFSET_END, 30)
consumer.close()

health = SourceHealth(stale_after_s=60, recovery_s=0)
service = LagService(LagConfig(mode="burrow", intervals=3, offset_refresh_s=1.0), health)
source = KafkaLagSource("local", {"bootstrap.servers": boot, "log_level": 0}, service, health)
# Every round now times out, and clients get renewed: the topic listing (asked with 0 partitions known, as no round
# has succeeded) gets 5 s, the ListOffsets 0 s, so it is sent and times out at once, its answers still on their way.
# (A 5 ms limit for both let most rounds succeed on a quiet host.)
lag.ingest.hwm.request_timeout_s = lambda partitions: 5.0 if partitions == 0 else 0.0
lag.ingest.offsets_topic.request_timeout_s = lag.ingest.hwm.request_timeout_s  # the source's reads, as one module had
source.start()  # its first HWM round fails too
failed = 1 + sum(not source.hwm.poll_hwms() for _ in range(8))
reason = health.unavailable_reason("local", service.clock_ms())
lag.ingest.hwm.request_timeout_s = lag.ingest.offsets_topic.request_timeout_s = lambda partitions: 30.0
recovered = source.hwm.poll_hwms()
source.stop()
print(json.dumps({"timed_out": timed_out, "answered": answered, "ends": [ends[tp] for tp in tps],
                  "failed": failed, "reason": reason, "recovered": recovered}))
"""


def test_offset_reads_survive_timeouts_and_renewals(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("lag-offsets-timeouts", partitions=PARTITIONS)
    producer = kafka.producer()
    for i in range(7):
        producer.produce(topic, value=f"r{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    result = run_child(CHILD, kafka.bootstrap_servers, topic, str(PARTITIONS), timeout_s=180)
    assert result["timed_out"] > 0, result  # the timeouts really happened
    assert result["ends"] == [7] + [0] * (PARTITIONS - 1)
    assert result["failed"] == 9, result  # start's round and the 8 after it: three renewals (every third)
    assert result["reason"].startswith("no HWM read yet (KafkaException"), result
    assert "_TIMED_OUT" in result["reason"] or "Timed out" in result["reason"], result
    assert result["recovered"] is True
