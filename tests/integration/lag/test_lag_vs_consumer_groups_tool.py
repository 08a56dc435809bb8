"""Against Kafka's own tool, for each consumer group protocol: a classic group and a KIP-848 group
(`group.protocol=consumer`), each with a live member and committed offsets at different depths of a 3-partition
backlog; once nothing moves, the lag `kafka-pulse lag` serves on Burrow's route equals, partition by partition, what
`kafka-consumer-groups --describe --offsets` prints (#24 point 7; share groups: tests/integration/pulse/
test_share_groups.py, streams groups: tests/integration/lag/test_streams_groups.py)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from devstack.runtime import ensure_admin_tools
from kafka_pulse.clusters import dev_cluster_config
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.pulse_process import PulseProcess, PulseProcesses

pytestmark = pytest.mark.integration

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
PER_PARTITION = 30
COMMITTED = {0: 0, 1: 12, 2: 30}
"""Committed offset per partition: nothing read, part of it, all of it."""
Lags = dict[tuple[str, int], int]
CATCH_UP_S = 240
"""How long a new `lag` may take to read __consumer_offsets and serve the group."""


def tool_lags(kafka: KafkaHandle, group: str) -> Lags:
    """(topic, partition) -> LAG as `kafka-consumer-groups --describe --offsets` prints it (rows with "-" left out)."""
    tools = ensure_admin_tools(kafka.cluster.spec.kafka_version, cache_dir())  # the cluster's own version
    argv = [
        "java", "-cp", tools.classpath, CONSUMER_GROUP_COMMAND,
        "--bootstrap-server", kafka.bootstrap_servers, "--describe", "--offsets", "--group", group,
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(i for i, cells in enumerate(lines) if cells[:1] == ["GROUP"])
    lags: Lags = {}
    for cells in lines[header + 1 :]:
        row = dict(zip(lines[header], cells, strict=False))
        if row.get("LAG", "-") != "-":
            lags[(row["TOPIC"], int(row["PARTITION"]))] = int(row["LAG"])
    return lags


def our_lags(lag: PulseProcess, group: str) -> Lags | None:
    """(topic, partition) -> `current_lag` on Burrow's `/lag` route; None until the group is served."""
    answer = lag.client.get(f"{lag.url}/v3/kafka/dev/consumer/{group}/lag")
    if answer.status_code != 200:
        return None
    parts: list[dict[str, Any]] = answer.json()["status"]["partitions"]
    return {(p["topic"], p["partition"]): p["current_lag"] for p in parts}


@pytest.fixture
def lag(kafka: KafkaHandle, pulse_process: PulseProcesses) -> Iterator[PulseProcess]:
    cluster = dev_cluster_config(kafka.cluster).model_dump(mode="json")
    cluster["jmx"] = None
    config = {"clusters": [cluster], "lag": {"offset_refresh_s": 1, "group_allow": "^toolparity-"}}
    with pulse_process.start("lag", config) as running:
        yield running


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_lag_equals_kafka_consumer_groups_per_partition(kafka: KafkaHandle, lag: PulseProcess, protocol: str) -> None:
    topic, group = f"toolparity-{uuid.uuid4().hex[:8]}", f"toolparity-{protocol}-{uuid.uuid4().hex[:6]}"
    admin = kafka.admin()
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(timeout=30)
    producer = kafka.producer()
    for partition in COMMITTED:
        for i in range(PER_PARTITION):
            producer.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    extra: dict[str, Any] = {"enable.auto.commit": False}
    if protocol == "consumer":
        extra["group.protocol"] = "consumer"
    member: Consumer = kafka.consumer(group, **extra)
    try:
        member.subscribe([topic])

        def assigned() -> int:
            member.poll(0.2)
            return len(member.assignment())

        poll(assigned, lambda n: n == 3, 60, f"{group}'s member holding the 3 partitions")
        commit_offsets(member, [TopicPartition(topic, p, o) for p, o in COMMITTED.items()])
        want = {(topic, p): PER_PARTITION - o for p, o in COMMITTED.items()}
        # A new `lag` reads the shared cluster's whole __consumer_offsets first: by this test, every earlier test's
        # commits. In CI#10, with the beside process and a soak on the host, that took over 90 s.
        ours = poll(lambda: our_lags(lag, group), lambda got: got == want, CATCH_UP_S, f"{group}'s lag served")
        assert tool_lags(kafka, group) == ours  # nothing moved in between: the same moment
    finally:
        member.close()
