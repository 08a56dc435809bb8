"""Share groups (KIP-932) read from the real 4.x dev cluster (4.4.0 by default; `share.version` 2 there, 1 on 4.3.1, on
by default on both): a real share consumer (librdkafka's) reads part of a backlog, and the start offset and lag
kafka-pulse reads with DescribeShareGroupOffsets equal what Kafka's own `kafka-share-groups --describe --offsets` prints
for the group at the same moment (#24 points 1 and 7)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from prometheus_client import CollectorRegistry, generate_latest

from devstack.runtime import ensure_admin_tools
from kafka_pulse.clusters import dev_cluster_config
from lag.assembly import LagRunner
from lag.serve.routes import invalid_request
from pulse.config import parse_config
from pulse.http import HttpApp, HttpServer, Router
from pulse.kafka.share_groups import ShareGroup, ShareGroupReader
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.profile import kafka_python_config
from tests.fixtures.kafka import KafkaHandle
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration

CLUSTER = "local"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def tool_offsets(kafka: KafkaHandle, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(topic, partition) -> (start offset, lag) as `kafka-share-groups --describe --offsets` prints them; "-"
    (not known) reads as None."""
    tools = ensure_admin_tools(kafka.cluster.spec.kafka_version, cache_dir())  # the cluster's own version
    argv = [
        "java", "-cp", tools.classpath, SHARE_GROUP_COMMAND,
        "--bootstrap-server", kafka.bootstrap_servers, "--describe", "--offsets", "--group", group,
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    rows: dict[tuple[str, int], tuple[int | None, int | None]] = {}
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(i for i, cells in enumerate(lines) if cells[:1] == ["GROUP"])
    columns = lines[header]
    for cells in lines[header + 1 :]:
        row = dict(zip(columns, cells, strict=False))
        number = {k: (None if row.get(k, "-") == "-" else int(row[k])) for k in ("START-OFFSET", "LAG")}
        rows[(row["TOPIC"], int(row["PARTITION"]))] = (number["START-OFFSET"], number["LAG"])
    return rows


def read_group(reader: ShareGroupReader, group: str) -> ShareGroup | None:
    """`group` as one full read gives it; None while the read is incomplete (a fresh cluster's coordinators answer
    COORDINATOR_LOAD_IN_PROGRESS for a while) or the group is not listed yet."""
    read = reader.read()
    return next((g for g in read.groups if g.group == group), None) if read.reason == "" else None


def start_at_earliest(kafka: KafkaHandle, group: str) -> None:
    """`share.auto.offset.reset=earliest` for `group` (a group config; the default, latest, skips a backlog)."""
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin = kafka.admin()  # held until the answer: a freed client fails its futures
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def test_share_group_lag_equals_kafka_share_groups_tool(kafka: KafkaHandle) -> None:
    topic = kafka.create_topic("share-lag", partitions=2)
    group = f"share-{uuid.uuid4().hex[:8]}"
    produce(kafka, topic, 200, "s")
    start_at_earliest(kafka, group)
    consumer = ShareConsumer(kafka.client_config(**{"group.id": group}))
    consumer.subscribe([topic])
    try:
        poll(lambda: len(consumer.poll(0.5) or []), lambda n: n > 0, 90, "a first batch for the share consumer")
        consumer.commit_sync()  # accepts the batch (implicit acknowledgement)
    finally:
        consumer.close()
    produce(kafka, topic, 100, "t")  # a backlog behind what was consumed

    reader = ShareGroupReader(kafka_python_config(dev_cluster_config(kafka.cluster), "share-test", 10.0))

    def both() -> tuple[ShareGroup | None, dict[tuple[str, int], tuple[int | None, int | None]]]:
        return read_group(reader, group), tool_offsets(kafka, group)

    def agree(pair: tuple[ShareGroup | None, dict[tuple[str, int], tuple[int | None, int | None]]]) -> bool:
        ours = pair[0] and {(p.topic, p.partition): (p.start_offset, p.lag) for p in pair[0].partitions}
        return ours == pair[1]

    try:
        group_read, tool = poll(both, agree, 90, "kafka-pulse and kafka-share-groups agreeing on offsets and lag")
    finally:
        reader.close()
    assert group_read is not None and group_read.state == "Empty"  # the consumer left
    assert set(tool) == {(topic, 0), (topic, 1)}
    started = {tp: lag for tp, (start, lag) in tool.items() if start is not None}
    assert started and all(lag is not None for lag in started.values()), tool  # a started partition has its lag
    assert 0 < sum(lag for lag in started.values() if lag is not None) < 300, tool  # backlog less what was consumed
    assert all(lag is None for start, lag in tool.values() if start is None), tool  # never 0 for unknown


def test_a_stalled_start_offset_is_named_on_metrics_and_the_share_group_route(
    kafka: KafkaHandle, tmp_path: Path
) -> None:
    """`lag` with `share_groups` on: a group whose records wait while no member completes any (its start offset
    unmoved past `stall_after_s`) is STALLED on /metrics and on `/v3/kafka/{cluster}/sharegroup/{group}`, which
    names the partition and the offset; its lag equals the tool's, and Burrow's own routes still answer."""
    topic = kafka.create_topic("share-stall", partitions=1)
    group = f"stall-{uuid.uuid4().hex[:8]}"
    produce(kafka, topic, 50, "s")
    start_at_earliest(kafka, group)
    consumer = ShareConsumer(kafka.client_config(**{"group.id": group}))
    consumer.subscribe([topic])
    try:
        poll(lambda: len(consumer.poll(0.5) or []), lambda n: n > 0, 90, "a first batch for the share consumer")
        consumer.commit_sync()
    finally:
        consumer.close()
    produce(kafka, topic, 30, "t")  # records wait; nobody consumes them
    settings = {
        "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "lag": {
            "offset_refresh_s": 1,
            "evaluation_log": {"enabled": False},
            "share_groups": {"enabled": True, "refresh_s": 1, "stall_after_s": 3},
        },
    }
    config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
    registry = CollectorRegistry()
    runner = LagRunner(config, config.clusters, state=tmp_path / "state", registry=registry)
    server = HttpServer(HttpApp(Router(runner.api.routes(), invalid_request)), "127.0.0.1", 0).start()
    runner.start()
    try:
        url = f"{server.url}/v3/kafka/{CLUSTER}/sharegroup/{group}"

        def status() -> dict[str, Any]:
            answer = httpx.get(url, timeout=10)
            return answer.json() if answer.status_code == 200 else {}

        body = poll(status, lambda b: b.get("status", {}).get("status") == "STALLED", 60, f"{group} STALLED")
        (part,) = body["status"]["partitions"]
        tool = tool_offsets(kafka, group)
        assert tool == {(topic, 0): (part["start_offset"], part["lag"])}  # the unmoved offset: same at both reads
        assert part["lag"] > 0 and part["status"] == "STALLED"
        assert part["reason"].startswith(f"{topic}-0: start offset {part['start_offset']} unmoved for ")
        listing = httpx.get(f"{server.url}/v3/kafka/{CLUSTER}/sharegroup", timeout=10).json()
        assert group in listing["sharegroups"] and listing["error"] is False
        assert httpx.get(f"{server.url}/v3/kafka", timeout=10).json()["clusters"] == [CLUSTER]  # Burrow's, unchanged
        text = generate_latest(registry).decode()
        labels = f'cluster="{CLUSTER}",partition="0",share_group="{group}",topic="{topic}"'
        assert f"kafka_pulse_lag_share_partition_status{{{labels}}} 1.0" in text
        assert f"kafka_pulse_lag_share_partition_lag{{{labels}}} {float(part['lag'])}" in text
        assert f'kafka_pulse_lag_share_group_status{{cluster="{CLUSTER}",share_group="{group}"}} 1.0' in text
    finally:
        runner.stop()
        server.stop()
