"""Streams groups (KIP-1071) with a real Kafka Streams application on the 4.x dev cluster (4.4.0 by default; WordCount
is 4.3.1's, `devstack.runtime.client_version`): Kafka's WordCount demo (kafka-streams-examples from Maven Central) on
`group.protocol=streams`, watched by `lag` with `streams_groups` on. Started before its source topic exists, its group
is NOT_READY and flagged; once the topic is there it runs and is listed with its state, epochs and members; paused with
a backlog behind it, the input-topic lag the lag evaluator gives it equals what Kafka's own `kafka-streams-groups
--describe --offsets` prints at the same moment (#24 points 2 and 7)."""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from prometheus_client import CollectorRegistry, generate_latest

from devstack.runtime import ensure_admin_tools, ensure_streams_examples
from lag.assembly import LagRunner
from lag.serve.routes import invalid_request
from pulse.config import parse_config
from pulse.http import HttpApp, HttpServer, Router
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.integration.devstack.test_dev_cluster import produce

pytestmark = pytest.mark.integration

CLUSTER = "local"
WORD_COUNT = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
SOURCE = "streams-plaintext-input"
"""WordCountDemo's source topic (fixed in the demo)."""
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"

Lags = dict[tuple[str, int], int | None]


def tool_lags(kafka: KafkaHandle, group: str) -> Lags:
    """(topic, partition) -> OFFSET-LAG as `kafka-streams-groups --describe --offsets` prints it ("-" reads as None).
    The tool prints offsets only for a group with members, for the partitions of their active tasks."""
    tools = ensure_admin_tools(kafka.cluster.spec.kafka_version, cache_dir())  # the cluster's own version
    argv = [
        "java", "-cp", tools.classpath, STREAMS_GROUP_COMMAND,
        "--bootstrap-server", kafka.bootstrap_servers, "--describe", "--offsets", "--group", group,
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next((i for i, cells in enumerate(lines) if cells[:1] == ["GROUP"]), None)
    rows: Lags = {}
    if header is None:  # no members: the tool prints no table
        return rows
    for cells in lines[header + 1 :]:
        row = dict(zip(lines[header], cells, strict=False))
        if "PARTITION" in row and row["PARTITION"].isdigit():
            lag = row.get("OFFSET-LAG", "-")
            rows[(row["TOPIC"], int(row["PARTITION"]))] = None if lag == "-" else int(lag)
    return rows


def drop_source(kafka: KafkaHandle) -> None:
    """The demo's fixed source topic gone (a previous run may have left it), so the app starts against nothing."""
    admin = kafka.admin()
    if SOURCE in admin.list_topics(timeout=10).topics:
        admin.delete_topics([SOURCE])[SOURCE].result(timeout=30)
    poll(lambda: SOURCE in admin.list_topics(timeout=10).topics, lambda present: not present, 60, f"{SOURCE} gone")


def create_source(kafka: KafkaHandle, partitions: int) -> None:
    admin = kafka.admin()
    admin.create_topics([NewTopic(SOURCE, partitions, 3)])[SOURCE].result(timeout=30)

    def leaders(md: Any) -> bool:
        return md is not None and md.error is None and all(p.leader >= 0 for p in md.partitions.values())

    poll(lambda: admin.list_topics(topic=SOURCE, timeout=5).topics.get(SOURCE), leaders, 30, f"leaders of {SOURCE}")


class WordCount:
    """Kafka's WordCount demo on the streams protocol under an application id of its own, started as a Java
    process (again after it exits); every process it started is stopped by its PID."""

    def __init__(self, kafka: KafkaHandle, tmp_path: Path) -> None:
        self.app = f"wordcount-{uuid.uuid4().hex[:8]}"
        self.log = tmp_path / "wordcount.log"
        self.props = tmp_path / "wordcount.properties"
        settings = {
            "application.id": self.app,
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.protocol": "streams",
            "state.dir": str(tmp_path / "streams-state"),
            "commit.interval.ms": "500",
            "num.stream.threads": "1",
        }
        self.props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        self.classpath = ensure_streams_examples(kafka.cluster.spec.kafka_version, cache_dir()).classpath
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            argv = ["java", "-cp", self.classpath, WORD_COUNT, str(self.props)]
            self.processes.append(subprocess.Popen(argv, stdout=log, stderr=log))
        return self.processes[-1]

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # a paused one must run to act on SIGTERM
                process.terminate()
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)


def produce_to_partition_0(kafka: KafkaHandle, count: int, tag: str) -> None:
    """`count` records on the source topic's partition 0 alone, so the task of partition 1 processes nothing and
    commits nothing there."""
    errors: list[str] = []
    producer = kafka.producer()
    for i in range(count):
        producer.produce(
            SOURCE, partition=0, key=str(i).encode(), value=f"{tag}-{i}".encode(),
            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )  # fmt: skip
    assert producer.flush(30) == 0 and errors == []


def slow_heartbeats(kafka: KafkaHandle, group: str) -> None:
    """Group configs of `group` at the broker's maxima: `streams.heartbeat.interval.ms` 15 s (a Streams client waits
    two intervals for missing source topics before it gives up, so NOT_READY lasts 30 s to see) and
    `streams.session.timeout.ms` 60 s (a paused member stays in the group that long)."""
    entries = [
        ConfigEntry("streams.heartbeat.interval.ms", "15000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("streams.session.timeout.ms", "60000", incremental_operation=AlterConfigOpType.SET),
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = kafka.admin()  # held until the answer: a freed client fails its futures
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


@pytest.fixture
def word_count(kafka: KafkaHandle, tmp_path: Path) -> Iterator[WordCount]:
    drop_source(kafka)
    app = WordCount(kafka, tmp_path)
    slow_heartbeats(kafka, app.app)
    try:
        yield app
    finally:
        app.stop()


INGESTIONS = ("consumer_offsets", "admin")


class Watcher:
    """A lag runner with streams groups on, in one ingestion mode, serving its routes on a port of its own."""

    def __init__(self, kafka: KafkaHandle, tmp_path: Path, ingestion: str) -> None:
        settings = {
            "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
            "lag": {
                "offset_refresh_s": 1,
                "ingestion": ingestion,
                "evaluation_log": {"enabled": False},
                "streams_groups": {"enabled": True, "refresh_s": 1},
            },
        }
        config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
        self.ingestion = ingestion
        self.registry = CollectorRegistry()
        self.runner = LagRunner(config, config.clusters, state=tmp_path / f"state-{ingestion}", registry=self.registry)
        self.server = HttpServer(HttpApp(Router(self.runner.api.routes(), invalid_request)), "127.0.0.1", 0).start()
        self.runner.start()

    def status(self, app: str) -> dict[str, Any]:
        answer = httpx.get(f"{self.server.url}/v3/kafka/{CLUSTER}/streamsgroup/{app}", timeout=10)
        return answer.json()["status"] if answer.status_code == 200 else {}

    def lags(self, app: str) -> Lags:
        answer = httpx.get(f"{self.server.url}/v3/kafka/{CLUSTER}/consumer/{app}/lag", timeout=10).json()
        lags: Lags = {(p["topic"], p["partition"]): p["current_lag"] for p in answer["status"]["partitions"]}
        return lags

    def stop(self) -> None:
        self.runner.stop()
        self.server.stop()


def test_a_wordcount_app_is_listed_flagged_not_ready_and_its_lag_equals_the_tools(
    kafka: KafkaHandle, word_count: WordCount, tmp_path: Path
) -> None:
    """In both ingestion modes, side by side on the same app (one app run, not one per mode): `__consumer_offsets`
    holds the app's commits as any group's; admin ingestion fetches them for the streams groups described
    (confluent-kafka's group listing leaves streams groups out)."""
    app = word_count.app
    watchers: list[Watcher] = []
    try:
        for ingestion in INGESTIONS:
            watchers.append(Watcher(kafka, tmp_path, ingestion))
        # 1. No source topic: the coordinator holds the group NOT_READY, and kafka-pulse says so (the app gives up
        # after two heartbeat intervals: MissingSourceTopicException).
        word_count.start()
        for w in watchers:
            body = poll(partial(w.status, app), lambda s: s.get("status") == "NOT_READY", 90,
                        f"{app} NOT_READY ({w.ingestion})")  # fmt: skip
            assert body["state"] == "NotReady" and "NOT_READY" in body["reason"], (w.ingestion, body)
            text = generate_latest(w.registry).decode()
            assert f'kafka_pulse_streams_group_status{{cluster="{CLUSTER}",streams_group="{app}"}} 2.0' in text

        # 2. The topic appears and the app is started again: it runs its topology; listed with state, epochs and
        # its member. Its input is on partition 0 only: partition 1 stays without a commit (below).
        word_count.stop()
        create_source(kafka, partitions=2)
        produce_to_partition_0(kafka, 200, "alpha beta")
        process = word_count.start()
        for w in watchers:
            body = poll(
                partial(w.status, app),
                lambda s: s.get("state") == "Stable" and len(s["members"]) == 1 and s["members"][0]["active_tasks"] > 0,
                120,
                f"{app} Stable with its member ({w.ingestion})",
            )
            assert body["status"] == "OK" and body["topology_epoch"] is not None and SOURCE in body["source_topics"]
            (member,) = body["members"]
            assert member["topology_epoch"] == body["topology_epoch"] and not member["stale_topology"]
            assert member["member_epoch"] > 0 and body["group_epoch"] >= member["member_epoch"]
            listing = httpx.get(f"{w.server.url}/v3/kafka/{CLUSTER}/streamsgroup", timeout=10).json()
            assert app in listing["streamsgroups"] and listing["error"] is False

        def caught_up(s: dict[str, Any]) -> bool:
            """OK with no lag on both sub-topologies' inputs: the source topic's partitions and the repartition
            topic's, so both are known before the pause below. A partition without a commit counts its records from
            the log start, as the tool does (a repartition partition the counting task had not committed yet once
            read 0 here where the tool printed 504)."""
            inputs = {p["partition"] for p in s["lag"]["partitions"] if p["topic"] == SOURCE}
            repartition = {p["partition"] for p in s["lag"]["partitions"] if p["topic"].endswith("-repartition")}
            return s["lag"]["status"] == "OK" and inputs == repartition == {0, 1} and s["lag"]["totallag"] == 0

        for w in watchers:
            poll(
                partial(w.status, app),
                caught_up,
                120,
                f"{app} judged OK by the evaluator, caught up ({w.ingestion})",
            )

        # 3. Paused (SIGSTOP: still a member until its session times out, consuming nothing) with a backlog: the
        # evaluator's input-topic lag equals the tool's at the same moment (the tool prints offsets only for a
        # group with members), on the source topic's partition 1 too, which the app never committed (the tool
        # counts it from the log start; Burrow's placeholder would say 0).
        assert process.poll() is None, word_count.log.read_text()[-3000:]  # it ran throughout
        process.send_signal(signal.SIGSTOP)
        produce(kafka, SOURCE, 150, "gamma")

        def agree(seen: tuple[list[Lags], Lags]) -> bool:
            """Every partition the tool prints (the source topic's and the repartition topic's, each a
            sub-topology's input) has the same lag in each mode's."""
            ours, tool = seen
            inputs = {tp for tp in tool if tp[0] == SOURCE}
            return len(inputs) == 2 and all(mine.get(tp) == lag for mine in ours for tp, lag in tool.items())

        def backlog_seen(lags: Lags) -> bool:
            return sum(lag or 0 for (topic, _), lag in lags.items() if topic == SOURCE) == 150

        # Ours first (HTTP reads), then the tool (a JVM start, 20-30 s at load 40): the paused member leaves the
        # group 60 s after the pause, and the tool prints nothing for a group without members.
        for w in watchers:
            poll(partial(w.lags, app), backlog_seen, 60, f"the backlog of 150 in {app}'s lag ({w.ingestion})", 0.5)
        ours, tool = poll(
            lambda: ([w.lags(app) for w in watchers], tool_lags(kafka, app)),
            agree,
            45,
            "kafka-pulse and the tool agreeing",
        )
        assert sum(lag or 0 for (topic, _), lag in tool.items() if topic == SOURCE) == 150, tool
        assert (tool.get((SOURCE, 1)) or 0) > 0, tool  # never committed, counted from the log start by both
        for w, mine in zip(watchers, ours, strict=True):
            route = w.status(app)["lag"]
            assert {(p["topic"], p["partition"]): p["current_lag"] for p in route["partitions"]} == mine  # one verdict
            text = generate_latest(w.registry).decode()
            assert f'kafka_pulse_streams_group_input_lag{{cluster="{CLUSTER}",streams_group="{app}"}}' in text
            assert httpx.get(f"{w.server.url}/v3/kafka", timeout=10).json()["clusters"] == [CLUSTER]  # Burrow's
    finally:
        for w in watchers:
            w.stop()
