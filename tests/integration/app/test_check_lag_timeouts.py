"""The check's lag read survives deadlines that end with group requests in flight. With librdkafka 2.16, an Admin
request to a group coordinator whose request timeout expires while it waits for the coordinator aborts the process
(`rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0`): `kafka-pulse lag` died so on the
10,000-partition cluster, its status board running `read_lag` every 5 s. Here `read_lag` runs in a child process
(a native abort would kill pytest itself) over hundreds of groups with deadlines of 50 ms to 1 s, dropping its
clients with requests pending each time while a consumer polls beside it; the child must exit cleanly, reads the
deadline cut short name their groups unread, and a read with time to spare must still read every group it chose.
Before the fix the child aborted within seconds. The committed offsets are now read with kafka-python
(pulse/kafka/group_offsets.py), on a task abandoned at the deadline; the listing is still librdkafka's."""

from __future__ import annotations

import uuid
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from kafka_pulse.check.probe.kafka_probes import MAX_GROUPS
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.support.child import run_child

pytestmark = pytest.mark.integration

GROUPS = 300
"""More than MAX_GROUPS, so every read asks for its full 200 groups; one group's fetch never aborted librdkafka."""
PARTITIONS = 4
LOOP_S = 20.0
"""How long the child reads with short deadlines; unfixed, it aborted within 15 s in every run on this host."""

CHILD = """
import gc, json, sys, threading, time
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import LagFacts
from kafka_pulse.check.probe.kafka_probes import MAX_GROUPS, read_lag
from pulse.config import ClusterConfig

boot, topic, loop_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
cluster = ClusterConfig(name="local", bootstrap_servers=boot)
stop = threading.Event()

def poll():  # a consumer of the same process polling throughout, as lag's own consumer does
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "lag-timeouts-poller", "log_level": 0})
    consumer.subscribe([topic])
    while not stop.is_set():
        consumer.poll(0.1)
    consumer.close()

poller = threading.Thread(target=poll)
poller.start()
reads = cut_short = 0
end = time.monotonic() + loop_s
while time.monotonic() < end:
    for deadline_s in (0.05, 0.1, 0.2, 0.5, 1.0):
        facts = read_lag(cluster, cluster.bootstrap_servers, Deadline.after(deadline_s))
        reads += 1
        if isinstance(facts, LagFacts) and len(facts.groups) < min(facts.groups_listed, MAX_GROUPS):
            cut_short += 1
            assert len(facts.groups) + len(facts.unread) == facts.groups_listed, facts  # every group named
# With the collector off, a client that only the collector could free is still there after its read: a client
# freed by the collector may be freed on librdkafka's own thread, which aborts the process.
gc.collect()
gc.disable()
for deadline_s in (0.05, 0.1, 0.2, 0.5, 1.0) * 4:
    read_lag(cluster, cluster.bootstrap_servers, Deadline.after(deadline_s))
left = sum(isinstance(o, AdminClient) for o in gc.get_objects())
gc.enable()
final = read_lag(cluster, cluster.bootstrap_servers, Deadline.after(60))
stop.set()
poller.join()
assert isinstance(final, LagFacts), final
print(json.dumps({"reads": reads, "cut_short": cut_short, "listed": final.groups_listed,
                  "read": len(final.groups), "unread": len(final.unread), "left": left}))
"""


def test_lag_reads_cut_short_leave_the_process_alive(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("check-lag-timeouts", partitions=PARTITIONS)
    prefix = f"check-lag-timeouts-{uuid.uuid4().hex[:8]}"
    groups = [f"{prefix}-{i:03d}" for i in range(GROUPS)]
    tps = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
    first = kafka.consumer(groups[0])
    commit_offsets(first, tps)  # through a consumer, which waits out a coordinator still loading
    first.close()
    admin = kafka.admin()
    futures: dict[str, Future[Any]] = {}
    for group in groups[1:]:
        futures |= admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)], request_timeout=60)
    for future in futures.values():
        assert not [tp for tp in future.result(timeout=90).topic_partitions if tp.error is not None]

    result = run_child(CHILD, kafka.bootstrap_servers, topic, str(LOOP_S), timeout_s=300)
    assert result["cut_short"] > 0, result  # some reads really ended with offset fetches in flight (abandoned)
    assert result["left"] == 0, result  # no client is left for the garbage collector to free on any thread
    assert result["listed"] >= GROUPS, result
    assert result["read"] == MAX_GROUPS, result  # with time to spare, every chosen group answers
    assert result["unread"] == result["listed"] - MAX_GROUPS, result
