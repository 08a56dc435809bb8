"""The KRaft quorum on /metrics and the status page from DescribeQuorum against the real 4.x dev cluster: the leader and
its epoch, and a voter paused with SIGSTOP (a hung controller) seen falling behind, then caught up again once
resumed; DescribeQuorum asked of that paused node first is read from the next. The page's controller section is the
board's in-process check over the same collectors (no Kafka client of its own), judged as `kafka-pulse check`
judges it. And the snapshot-age rule's premise on a real node: an idle node writes metadata snapshots on its
interval (the leader's no-op records grow the log), so the age it exports resets."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from collectors.catalogue import BeanQuery
from collectors.cluster_quorum import fetch_quorum
from collectors.cluster_state import ClusterHealth, fetch_snapshot
from collectors.scrapers import ScrapeResult
from collectors.service import CollectorService
from collectors.transport import open_transport
from devstack.cluster import DevCluster
from devstack.topology import Security
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.judge.verdict import Section, Status
from kafka_pulse.clusters import dev_cluster_config
from kafka_pulse.status.in_process import in_process_check
from pulse.config import PulseConfig, parse_config
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION, START_TIMEOUT_S, KafkaHandle
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration

BEHIND_S = 5.0
"""A voter's caught-up age past which it is shown behind; the dev cluster's voters catch up within milliseconds."""


def voter_age(result: ScrapeResult[ClusterHealth], node: int) -> float | None:
    quorum = result.value.quorum if result.ok and result.value is not None else None
    ages = {v.node: v.caught_up_age_s for v in quorum.voters} if quorum is not None else {}
    return ages.get(node)


def page_controller(service: CollectorService, config: PulseConfig) -> Section:
    """The status page's controller section, as the board of a `run` with these collectors judges it."""
    check = in_process_check(None, cluster_state=service)
    sections = check(config, config.clusters[0], Deadline.after(4.0))
    return next(s for s in sections if s.name == "controller")


def test_a_paused_voter_falls_behind_on_metrics_and_catches_up_when_resumed(kafka: KafkaHandle) -> None:
    text = yaml.safe_dump(
        {
            "clusters": [{"name": "dev", "bootstrap_servers": kafka.bootstrap_servers}],
            "collectors": {"scrape_interval_s": 1},
        }
    )
    config = parse_config(text, "pulse.yaml", {})
    registry = CollectorRegistry()
    service = CollectorService(config.clusters, config.collectors)
    service.register(registry)
    service.start()
    states = service.states["dev"]
    paused: int | None = None
    try:
        first = states.wait_for(lambda r: r.ok and r.value is not None and r.value.quorum is not None, 60)
        assert first.value is not None and first.value.quorum is not None
        leader, epoch = first.value.quorum.leader, first.value.quorum.epoch
        assert leader in (1, 2, 3) and epoch > 0, first.value.quorum
        exposed = generate_latest(registry).decode()
        assert f'kafka_pulse_kraft_leader{{cluster="dev",node="{leader}"}} 1.0' in exposed, exposed
        assert 'kafka_pulse_kraft_voters{cluster="dev"} 3.0' in exposed
        victim = next(n for n in (1, 2, 3) if n != leader)
        kafka.cluster.pause(victim)
        paused = victim
        behind = states.wait_for(lambda r: (voter_age(r, victim) or 0.0) > BEHIND_S, 90)
        assert behind.value is not None and behind.value.quorum is not None
        assert behind.value.quorum.leader == leader, "pausing a follower must not move the leader"
        exposed = generate_latest(registry).decode()
        line = next(
            x
            for x in exposed.splitlines()
            if x.startswith(f'kafka_pulse_kraft_voter_caught_up_age_seconds{{cluster="dev",node="{victim}"}}')
        )
        assert float(line.rsplit(" ", 1)[1]) > BEHIND_S, line
        named = f"controller quorum voter {victim} last caught up"
        page = poll(
            lambda: page_controller(service, config),
            lambda s: s.status is Status.WARN and any(r.startswith(named) for r in s.reasons),
            90,
            f"the page's controller section naming voter {victim}",
            interval_s=1.0,
        )
        assert page.details["leader"] == leader, page
        kafka.cluster.resume(victim)
        paused = None
        states.wait_for(lambda r: (voter_age(r, victim) or BEHIND_S + 1) < BEHIND_S, 90)
        poll(lambda: page_controller(service, config), lambda s: s.status is Status.OK, 90, "the page's OK again", 1.0)
    finally:
        if paused is not None:
            kafka.cluster.resume(paused)
        service.stop()
        admin = kafka.admin()
        poll(lambda: admin.list_topics(timeout=10), lambda md: len(md.brokers) == 3 and all(
            len(p.isrs) == len(p.replicas) for t in md.topics.values() for p in t.partitions.values()
        ), 120, "every broker back and every ISR full")  # fmt: skip


def test_describe_quorum_asked_of_a_hung_broker_first_is_read_from_the_next(kafka: KafkaHandle) -> None:
    """The cluster-state read's DescribeQuorum, asked first of a SIGSTOPped broker (as `unanswered` orders it), gives
    up on that broker after its attempt and reads the quorum from the next one: the quorum is read, and the hung
    broker is kept in `unanswered`, to be asked last by the next read."""
    cluster = dev_cluster_config(kafka.cluster)
    snapshot = fetch_snapshot(kafka.admin(), "dev", 30)
    healthy = fetch_quorum(cluster, snapshot, 10)
    assert healthy.quorum is not None and healthy.quorum.leader in snapshot.addresses, healthy
    victim = next(n for n in sorted(snapshot.addresses) if n != healthy.quorum.leader)
    others = sorted(n for n in snapshot.addresses if n != victim)
    unanswered = set(others)  # so the victim is asked first
    kafka.cluster.pause(victim)
    try:
        read = fetch_quorum(cluster, snapshot, 10, unanswered)
    finally:
        kafka.cluster.resume(victim)
        admin = kafka.admin()
        poll(lambda: admin.list_topics(timeout=10), lambda md: len(md.brokers) == 3 and all(
            len(p.isrs) == len(p.replicas) for t in md.topics.values() for p in t.partitions.values()
        ), 120, "every broker back and every ISR full")  # fmt: skip
    assert read.quorum_up is True and read.quorum is not None, read
    assert read.quorum.leader == healthy.quorum.leader
    assert victim in unanswered and others[0] not in unanswered, (victim, unanswered)


SNAPSHOT_INTERVAL_MS = 5000
"""metadata.log.max.snapshot.interval.ms of the snapshot test's node (default 1 h)."""
SNAPSHOT_BEANS = BeanQuery("kafka.server:type=SnapshotEmitter,name=*", ("Value",))


def test_an_idle_node_writes_metadata_snapshots_so_the_exported_age_resets(tmp_path: Path) -> None:
    """KafkaMetadataSnapshotStale assumes a healthy node snapshots every interval even with no client traffic: a
    1-node cluster with a 5 s interval writes one (LatestSnapshotGeneratedBytes leaves 0) and the age it exports
    then falls back below an earlier reading, which only a newer snapshot does."""
    cluster = DevCluster.plan(
        tmp_path, 1, KAFKA_VERSION, Security.PLAINTEXT,
        broker_overrides={"metadata.log.max.snapshot.interval.ms": str(SNAPSHOT_INTERVAL_MS)},
    )  # fmt: skip
    register_log("kraft-snapshots node 1", cluster.log_path(1))
    cluster.up(cache_dir(), timeout_s=START_TIMEOUT_S)
    try:
        config = dev_cluster_config(cluster)
        assert config.jmx is not None
        jmx = open_transport("jmxquery", config.jmx.brokers[0], config.jmx.model_copy(update={"timeout_s": 30}))

        def emitter() -> dict[str, float]:
            return {r.bean.rsplit("=", 1)[1]: float(r.value) for r in jmx.read((SNAPSHOT_BEANS,))}

        def generated() -> tuple[float, float, float]:
            """The latest snapshot's bytes, and the bounds of when it was generated (ms since the epoch): the age
            was taken somewhere between the read's start and end."""
            start_ms = time.time() * 1000
            e = emitter()
            end_ms = time.time() * 1000
            age_ms = e.get("LatestSnapshotGeneratedAgeMs", 0.0)
            return e.get("LatestSnapshotGeneratedBytes", 0.0), start_ms - age_ms, end_ms - age_ms

        try:
            first = poll(generated, lambda g: g[0] > 0, 120, "a first snapshot", 1.0)
            latest_first_ms = first[2]
            # Newer only when its earliest possible generation time is past the first's latest: a plain "age below
            # the first reading's" could wait forever when that reading came right after a snapshot.
            poll(
                generated,
                lambda g: g[1] > latest_first_ms,
                120,
                "a snapshot generated after the first one",
                1.0,
            )
        finally:
            jmx.close()
    finally:
        cluster.down()
