"""A KIP-853 voter change on a real dynamic quorum (`dev up --dynamic-quorum`), held pending and then completed, as
kafka-pulse shows it: the leader's `uncommitted-voter-change` on /metrics at 1 while the VotersRecord cannot commit
and 0 once it has, and DescribeQuorum's voter and observer sets moving on /metrics and on the status page's
controller section (the verdict `check` gives). Kafka's own `kafka-metadata-quorum` drives the change."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.cluster_state import ClusterHealth
from collectors.scrapers import ScrapeResult
from collectors.service import CollectorService
from devstack.cluster import DevCluster
from devstack.runtime import ensure_admin_tools
from devstack.topology import Security
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.judge.verdict import Section
from kafka_pulse.clusters import dev_cluster_config
from kafka_pulse.status.in_process import in_process_check
from pulse.config import PulseConfig, parse_config
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION, START_TIMEOUT_S
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"
PENDING = "kafka_server_raftmetrics_uncommitted_voter_change"
HELD_MS = 300_000
"""controller.quorum.request.timeout.ms and controller.quorum.fetch.timeout.ms of the test cluster (default 2 s
each). `uncommitted-voter-change` is 1 while the leader holds an AddVoter or RemoveVoter request open, and the
leader drops the request when this request timeout passes (REQUEST_TIMED_OUT), the record still uncommitted; and a
leader without fetches from a majority of its voter set resigns after 1.5 times the fetch timeout (check-quorum,
KIP-595), which also ends its leader-only metric. With the defaults the flag lasts 2 s at most; 5 minutes leave the
change held open long enough to be read while the collectors' cluster-state read recovers (STATE_WAIT_S)."""
STATE_WAIT_S = 150
"""How long the collectors' DescribeQuorum may take to show the change: a librdkafka request in flight to the paused
broker holds its connection up until socket.timeout.ms (60 s), and metadata requests sent to it meanwhile time out."""


def raft_pending(registry: CollectorRegistry) -> dict[str, float]:
    """Broker -> `uncommitted-voter-change` as /metrics has it (the quorum leader alone registers it)."""
    text = generate_latest(registry).decode()
    return {
        s.labels["broker"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == PENDING
    }


def gauge(registry: CollectorRegistry, name: str) -> float | None:
    values = [s.value for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples
              if s.name == name]  # fmt: skip
    return values[0] if values else None


def sets(result: ScrapeResult[ClusterHealth]) -> tuple[set[int], set[int]] | None:
    """(voters, observers) of the collectors' latest DescribeQuorum; None when it has none."""
    quorum = result.value.quorum if result.ok and result.value is not None else None
    return ({v.node for v in quorum.voters}, set(quorum.observers)) if quorum is not None else None


def page_controller(service: CollectorService, config: PulseConfig) -> Section:
    """The status page's controller section, as the board of a `run` with these collectors judges it."""
    check = in_process_check(None, cluster_state=service)
    return next(s for s in check(config, config.clusters[0], Deadline.after(4.0)) if s.name == "controller")


def quorum_command(cluster: DevCluster, leader: int, *args: str) -> subprocess.Popen[str]:
    """`kafka-metadata-quorum --bootstrap-controller <leader> ARGS` from the cluster's own kafka-tools."""
    tools = ensure_admin_tools(cluster.spec.kafka_version, cache_dir())
    controller = f"127.0.0.1:{cluster.node(leader).controller_port}"
    argv = ["java", "-cp", tools.classpath, QUORUM_COMMAND, "--bootstrap-controller", controller, *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_voter_change_pending_then_committed_shows_on_metrics_and_the_page(tmp_path: Path) -> None:
    cluster = DevCluster.plan(
        tmp_path, 3, KAFKA_VERSION, Security.PLAINTEXT, dynamic_quorum=True,
        broker_overrides={"controller.quorum.request.timeout.ms": str(HELD_MS),
                          "controller.quorum.fetch.timeout.ms": str(HELD_MS)},
    )  # fmt: skip
    for node in cluster.spec.nodes:
        register_log(f"kraft-voter-change node {node.node_id}", cluster.log_path(node.node_id))
    cluster.up(cache_dir(), timeout_s=START_TIMEOUT_S)
    service: CollectorService | None = None
    paused: int | None = None
    commands: list[subprocess.Popen[str]] = []
    try:
        cluster_entry = dev_cluster_config(cluster).model_dump(mode="json")
        text = yaml.safe_dump({"clusters": [cluster_entry], "collectors": {"scrape_interval_s": 1}})
        config = parse_config(text, "pulse.yaml", {})
        registry = CollectorRegistry()
        service = CollectorService(config.clusters, config.collectors)
        service.register(registry)
        service.start()
        states = service.states["dev"]
        first = states.wait_for(lambda r: (sets(r) or (set(), set()))[0] == {1, 2, 3}, 120)
        assert first.value is not None and first.value.quorum is not None
        leader = first.value.quorum.leader
        assert leader is not None and sets(first) == ({1, 2, 3}, set()), first.value.quorum
        poll(lambda: raft_pending(registry), lambda p: p == {str(leader): 0.0}, 60, "the leader's flag at 0", 1.0)
        held, removed = (n for n in (1, 2, 3) if n != leader)

        # Pause one follower, then remove the other: the new voter set {leader, held} needs `held` to commit.
        cluster.pause(held)
        paused = held
        directory = cluster.node(removed).directory_id
        assert directory is not None
        remove = quorum_command(
            cluster, leader, "remove-controller",
            "--controller-id", str(removed), "--controller-directory-id", directory,
        )  # fmt: skip
        commands.append(remove)
        poll(lambda: raft_pending(registry), lambda p: p == {str(leader): 1.0}, 60, "the change pending", 1.0)
        states.wait_for(lambda r: sets(r) == ({leader, held}, {removed}), STATE_WAIT_S)
        assert gauge(registry, "kafka_pulse_kraft_voters") == 2
        assert gauge(registry, "kafka_pulse_kraft_observers") == 1
        page = poll(
            lambda: page_controller(service, config),
            lambda s: [v["node"] for v in s.details.get("voters", ())] == sorted((leader, held)),
            60,
            "the page's controller section with the new voter set",
            interval_s=1.0,
        )
        assert page.details["observers"] == [removed], page
        assert raft_pending(registry) == {str(leader): 1.0}, "still pending: the held voter has not fetched it"
        # Nothing commits while the new voter set lacks its majority: the high watermark stands still.
        still = gauge(registry, "kafka_pulse_kraft_high_watermark")
        assert still is not None
        asked = time.time()
        later = states.wait_for(lambda r: sets(r) is not None and r.finished_s - r.duration_s > asked, STATE_WAIT_S)
        assert later.value is not None and later.value.quorum is not None
        assert later.value.quorum.high_watermark == still, "a read begun later sees the same high watermark"

        cluster.resume(held)
        paused = None
        poll(lambda: raft_pending(registry), lambda p: set(p.values()) == {0.0}, 90, "the change committed", 1.0)
        poll(lambda: gauge(registry, "kafka_pulse_kraft_high_watermark"), lambda hw: (hw or 0) > still, STATE_WAIT_S,
             "the high watermark moving again", 1.0)  # fmt: skip
        after = states.wait_for(lambda r: sets(r) == ({leader, held}, {removed}), STATE_WAIT_S)
        assert after.value is not None and after.value.quorum is not None
        out, _ = remove.communicate(timeout=120)
        print(f"remove-controller {removed}: status {remove.returncode}\n{out[-2000:]}")  # may time out: no matter

        # The removed node, a controller now observing, is added back once caught up (AddVoter refuses it before).
        now_leader = after.value.quorum.leader or leader
        properties = str(cluster.node_dir(removed) / "server.properties")

        def add_back() -> int:
            add = quorum_command(cluster, now_leader, "--command-config", properties, "add-controller")
            commands.append(add)
            out, _ = add.communicate(timeout=120)
            print(f"add-controller {removed}: status {add.returncode}\n{out[-2000:]}")  # shown if the test fails
            return add.returncode

        poll(add_back, lambda status: status == 0, 180, f"add-controller of node {removed} accepted", 5.0)
        states.wait_for(lambda r: sets(r) == ({1, 2, 3}, set()), 60)
        poll(lambda: raft_pending(registry), lambda p: set(p.values()) == {0.0}, 60, "nothing pending", 1.0)
        assert gauge(registry, "kafka_pulse_kraft_voters") == 3
        assert gauge(registry, "kafka_pulse_kraft_observers") == 0
    finally:
        if paused is not None:
            cluster.resume(paused)
        for command in commands:
            if command.poll() is None:
                command.kill()
            command.wait()
        if service is not None:
            service.stop()
        cluster.down(keep_data=True)  # logs for the failure report; tmp_path is cleaned up by pytest
