"""A Kafka Streams application restarted with a changed topology, on the 4.x dev cluster (#24 point 2, stale topology
epochs). What the coordinator does, from Kafka 4.3.1's source and shown here with real Streams processes:

- The Streams client sends topology epoch 0 whatever its topology (`StreamsRebalanceData.topologyEpoch()` returns a
  constant 0 in 4.3.1 and 4.4.0; no Streams config sets it), so the group's topology epoch is 0 and no member is ever
  below it: STALE_TOPOLOGY (a member whose epoch is below the group's, kept in the group with that status) is never
  reached by a Java Streams client.
- `GroupMetadataManager.maybeUpdateTopology` keeps the group's first topology for the group's life: a member that
  joins with a different topology at an epoch not below the group's is refused with INVALID_REQUEST "Topology
  updates are not supported yet." (the Streams client treats it as fatal and ends in ERROR), even when the group is
  empty; only deleting the group (no members) lets the new topology in.

So the refused instance is not in the group's description at all: the group goes on describing its old members and
topology, OK. What an operator sees is the broker's count of refused heartbeats,
`kafka_network_requestmetrics_errors_total{request="StreamsGroupHeartbeat",error="INVALID_REQUEST"}` (scraped by the
collectors, alerted on by examples/prometheus-health/streams-groups.rules.yml), and a group that stays Empty while
its new instances are deployed. The first test shows that with real Streams processes; the second shows the
coordinator keeping a member on an older epoch, and kafka-pulse flagging it, with members that send their own epoch.
"""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from devstack.runtime import ensure_streams_examples
from lag.assembly import LagRunner
from lag.serve.routes import invalid_request
from pulse.config import parse_config
from pulse.http import HttpApp, HttpServer, Router
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle
from tests.integration.collectors.test_collectors import scrape_all
from tests.integration.devstack.test_dev_cluster import produce
from tests.integration.lag.test_streams_groups import slow_heartbeats
from tests.support.streams_heartbeat import STALE_TOPOLOGY, RawStreamsMember

pytestmark = pytest.mark.integration

CLUSTER = "local"
SOURCE = Path(__file__).parent / "resources" / "TopologyVariant.java"
ERRORS = "kafka_network_requestmetrics_errors"
REFUSED = "Topology updates are not supported yet."


def refused_heartbeats(kafka: KafkaHandle) -> float:
    """StreamsGroupHeartbeat responses with INVALID_REQUEST, summed over the brokers (0 before the first)."""
    family = scrape_all(kafka, "jpype").get(ERRORS)
    samples = family.samples if family else []
    return sum(
        s.value
        for s in samples
        if dict(s.labels).get("request") == "StreamsGroupHeartbeat" and dict(s.labels).get("error") == "INVALID_REQUEST"
    )


class StreamsApp:
    """Instances of one application id running `TopologyVariant` (compiled here with javac), each a Java process with
    its own state directory and log; every process it started is stopped by its PID."""

    def __init__(self, kafka: KafkaHandle, tmp_path: Path, topic: str) -> None:
        self.app = f"topology-change-{uuid.uuid4().hex[:8]}"
        self.topic = topic
        self.tmp_path = tmp_path
        self.kafka = kafka
        libs = ensure_streams_examples(kafka.cluster.spec.kafka_version, cache_dir()).classpath
        classes = tmp_path / "classes"
        javac = ["javac", "-cp", libs, "-d", str(classes), str(SOURCE)]
        subprocess.run(javac, capture_output=True, text=True, timeout=120, check=True)
        self.classpath = f"{classes}:{libs}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, variant: str) -> tuple[subprocess.Popen[bytes], Path]:
        n = len(self.processes)
        settings = {
            "application.id": self.app,
            "bootstrap.servers": self.kafka.bootstrap_servers,
            "group.protocol": "streams",
            "state.dir": str(self.tmp_path / f"state-{n}"),
            "commit.interval.ms": "500",
            "num.stream.threads": "1",
        }
        props = self.tmp_path / f"instance-{n}.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        log = self.tmp_path / f"instance-{n}-{variant}.log"
        with log.open("ab") as out:
            argv = ["java", "-cp", self.classpath, "TopologyVariant", str(props), self.topic, variant]
            self.processes.append(subprocess.Popen(argv, stdout=out, stderr=out))
        return self.processes[-1], log

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # a clean close: the member leaves the group at once
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes:
            self.stop(process)


@pytest.fixture
def streams_app(kafka: KafkaHandle, tmp_path: Path) -> Iterator[StreamsApp]:
    topic = kafka.create_topic("topology-change", partitions=2)
    app = StreamsApp(kafka, tmp_path, topic)
    try:
        yield app
    finally:
        app.stop_all()


class LagView:
    """`lag` with streams groups read every second, its API on an ephemeral port and its registry for /metrics."""

    def __init__(self, kafka: KafkaHandle, tmp_path: Path) -> None:
        settings = {
            "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
            "lag": {"evaluation_log": {"enabled": False}, "streams_groups": {"enabled": True, "refresh_s": 1}},
        }
        config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
        self.registry = CollectorRegistry()
        self.runner = LagRunner(config, config.clusters, state=tmp_path / "state", registry=self.registry)
        self.server = HttpServer(HttpApp(Router(self.runner.api.routes(), invalid_request)), "127.0.0.1", 0).start()
        self.runner.start()

    def status(self, group: str) -> dict[str, Any]:
        """The streams group route's `status` ({} while the group is not listed)."""
        answer = httpx.get(f"{self.server.url}/v3/kafka/{CLUSTER}/streamsgroup/{group}", timeout=10)
        return answer.json()["status"] if answer.status_code == 200 else {}

    def gauges(self, group: str) -> tuple[str, str]:
        """The `status` and `stale_topology_members` samples of `group` on /metrics (value included)."""
        text = generate_latest(self.registry).decode()
        labels = f'{{cluster="{CLUSTER}",streams_group="{group}"}} '
        found = [
            next(line for line in text.splitlines() if line.startswith(f"kafka_pulse_streams_group_{name}{labels}"))
            for name in ("status", "stale_topology_members")
        ]
        return found[0].rsplit(" ", 1)[1], found[1].rsplit(" ", 1)[1]

    def stop(self) -> None:
        self.runner.stop()
        self.server.stop()


@pytest.fixture
def lag_view(kafka: KafkaHandle, tmp_path: Path) -> Iterator[LagView]:
    view = LagView(kafka, tmp_path)
    try:
        yield view
    finally:
        view.stop()


def test_a_changed_topology_is_refused_not_stale_and_the_refusal_is_counted(
    kafka: KafkaHandle, streams_app: StreamsApp, lag_view: LagView
) -> None:
    app = streams_app.app

    def status() -> dict[str, Any]:
        return lag_view.status(app)

    def running(s: dict[str, Any]) -> bool:
        return s.get("state") == "Stable" and len(s["members"]) == 1 and s["members"][0]["active_tasks"] == 2

    def refused(process: subprocess.Popen[bytes], log: Path) -> str:
        """The instance's log once it has ended on its own (ERROR: exit status 1)."""
        poll(process.poll, lambda code: code is not None, 120, f"the refused instance of {app} ending")
        text = log.read_text(errors="replace")
        assert process.returncode == 1, text[-3000:]
        return text

    produce(kafka, streams_app.topic, 20, "v1")
    # 1. The first instance (stateless) sets the group's topology: epoch 0 for the group and its member.
    first, first_log = streams_app.start("stateless")
    body = poll(status, running, 120, f"{app} Stable with its first instance")
    assert body["status"] == "OK" and body["topology_epoch"] == 0, body
    (member,) = body["members"]
    assert member["topology_epoch"] == 0 and not member["stale_topology"]
    before = refused_heartbeats(kafka)

    # 2. A second instance of the same application with a changed topology (a state store and its changelog):
    # refused at its first heartbeat, it never joins and ends in ERROR; the group keeps its member and topology,
    # and nobody is on an older topology epoch, so the group stays OK (never STALE_TOPOLOGY).
    second, second_log = streams_app.start("counting")
    text = refused(second, second_log)
    assert "INVALID_REQUEST" in text and REFUSED in text and "-> ERROR" in text, text[-3000:]
    after = status()
    assert after["status"] == "OK" and after["topology_epoch"] == 0, after
    assert [m["member_id"] for m in after["members"]] == [member["member_id"]], after
    assert lag_view.gauges(app) == ("0.0", "0.0")  # status OK, no stale member
    # The broker counts the refusal (the collectors' StreamsGroupHeartbeat error meter).
    poll(lambda: refused_heartbeats(kafka), lambda n: n >= before + 1, 60, "the refused heartbeat counted")

    # 3. A full redeploy: the first instance stopped (the group is Empty, its topology kept), the changed one
    # started alone: refused again, so the group stays Empty while the new topology is "deployed".
    streams_app.stop(first)
    poll(status, lambda s: s.get("state") == "Empty" and not s["members"], 60, f"{app} Empty")
    third, third_log = streams_app.start("counting")
    assert REFUSED in refused(third, third_log)
    assert status()["state"] == "Empty"

    # 4. Once the group is deleted, the changed topology joins and runs (a fresh group, topology epoch 0 again).
    admin = kafka.admin()
    admin.delete_consumer_groups([app])[app].result(timeout=30)
    streams_app.start("counting")
    body = poll(status, running, 120, f"{app} Stable with its changed topology")
    assert body["status"] == "OK" and body["topology_epoch"] == 0, body
    assert first_log.read_text(errors="replace").count("-> ERROR") == 0


def test_a_member_on_an_older_topology_epoch_is_kept_flagged_stale_and_clears_once_it_rejoins(
    kafka: KafkaHandle, lag_view: LagView
) -> None:
    """STALE_TOPOLOGY on the real coordinator, with members that send their own topology epoch (no Java Streams
    client does: tests/support/streams_heartbeat.py): the group's topology set at epoch 1, a member joining at
    epoch 0 is kept, told STALE_TOPOLOGY in its heartbeat response and described with its own epoch, so kafka-pulse
    flags the group and names it; restarted at epoch 1 (leave, join), the flag clears."""
    topic = kafka.create_topic("stale-epoch", partitions=2)
    group = f"stale-epoch-{uuid.uuid4().hex[:8]}"
    slow_heartbeats(kafka, group)  # 60 s sessions: the members stay without further heartbeats
    members: list[RawStreamsMember] = []

    def member(epoch: int) -> RawStreamsMember:
        members.append(RawStreamsMember(kafka.bootstrap_servers, group, topic, epoch))
        return members[-1]

    def stale_codes(answer: dict[str, Any]) -> list[str]:
        return [s["status_detail"] for s in answer["status"] or () if s["status_code"] == STALE_TOPOLOGY]

    try:
        current = member(1)
        joined = current.join()
        assert joined["error_code"] == 0 and stale_codes(joined) == [], joined
        old = member(0)
        joined = old.join()
        assert joined["error_code"] == 0 and joined["member_epoch"] > 0, joined  # kept, not fenced
        assert stale_codes(joined) == ["The member's topology epoch 0 is behind the group's topology epoch 1."]

        body = poll(
            lambda: lag_view.status(group), lambda s: s.get("status") == "STALE_TOPOLOGY", 60, f"{group} flagged"
        )
        assert (
            body["topology_epoch"] == 1 and old.member_id in body["reason"] and current.member_id not in body["reason"]
        )
        epochs = {m["member_id"]: (m["topology_epoch"], m["stale_topology"]) for m in body["members"]}
        assert epochs == {current.member_id: (1, False), old.member_id: (0, True)}, body
        assert lag_view.gauges(group) == ("1.0", "1.0")

        # The stale member restarted with the group's topology: it leaves and joins again at epoch 1.
        assert old.leave()["error_code"] == 0
        assert stale_codes(member(1).join()) == []
        body = poll(
            lambda: lag_view.status(group),
            lambda s: s.get("status") == "OK" and len(s["members"]) == 2,
            60,
            f"{group} OK again with two members",
        )
        assert all(m["topology_epoch"] == 1 and not m["stale_topology"] for m in body["members"]), body
        assert lag_view.gauges(group) == ("0.0", "0.0")
    finally:
        for m in members:
            m.leave()  # an error code for the one that left already
            m.close()
