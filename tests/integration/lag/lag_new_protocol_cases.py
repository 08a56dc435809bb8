"""Consumer groups on the new protocol (KIP-848, `group.protocol=consumer`) judged as classic groups are, on the real
3-node Kafka 4.x cluster (4.4.0 by default; its default `group.version=1` enables the protocol). One workload per case
(a caught-up group, a slow one, a stalled one and a stopped one, each a real subscribed member committing once a
second), run for each protocol x each ingestion mode through `LagRunner` as `kafka-pulse lag` builds it: statuses,
owners and member counts in the Burrow v3 API, /metrics (member counts and per-member lag), the evaluation log and
`check`'s lag snapshot. A rolling upgrade from the classic protocol keeps the group's history. Share groups (KIP-932, on
by default: `share.version` 2 in 4.4.0, 1 in 4.3.1) are listed, not judged."""

from __future__ import annotations

import itertools
import time
import uuid
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pyarrow.dataset as ds
import pytest
import yaml
from confluent_kafka import Consumer, KafkaException, ShareConsumer, TopicPartition
from prometheus_client import CollectorRegistry, generate_latest

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import LagFacts
from kafka_pulse.check.probe.kafka_probes import read_lag
from kafka_pulse.clusters import dev_cluster_config
from lag.assembly import LagRunner
from lag.notify.evaluation_log import GROUPS, PARTITIONING, PARTITIONS
from lag.protocol import Status
from pulse.config import parse_config
from pulse.polling import poll
from pulse.ports import wait_until
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.integration.devstack.test_dev_cluster import produce
from tests.support.lag_api import serve_lag_api

pytestmark = pytest.mark.integration

CLUSTER = "local"
WANT = {"ok": Status.OK, "slow": Status.WARN, "stall": Status.STALL, "stop": Status.STOP}
"""The partition status each workload must reach, whatever the protocol or the ingestion mode."""
GROUP_STATUS = {"ok": "OK", "slow": "WARN", "stall": "ERR", "stop": "ERR"}


def member(kafka: KafkaHandle, group: str, protocol: str) -> Consumer:
    """A subscribed member of `group` with its own client id; joined once the group gave it the partition."""
    extra: dict[str, Any] = {"client.id": f"{group}-client", "enable.auto.offset.store": False}
    if protocol == "consumer":
        extra["group.protocol"] = "consumer"
    return kafka.consumer(group, **extra)


def join(consumers: dict[str, Consumer], topic: str) -> None:
    for c in consumers.values():
        c.subscribe([topic])
    for name, c in consumers.items():
        assert wait_until(partial(assigned, c), 60), f"{name} never got its partition"


def assigned(consumer: Consumer) -> bool:
    consumer.poll(0.2)
    return bool(consumer.assignment())


def log_rows(directory: Path) -> list[dict[str, Any]]:
    dataset = ds.dataset(directory, format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive"))
    rows: list[dict[str, Any]] = dataset.to_table().to_pylist()
    return rows


def log_judged(directory: Path, group: dict[str, str]) -> bool:
    """Whether the evaluation log's flushed files already hold the stalled and stopped groups' ERR and the slow
    group's WARN as known rows: the log runs on its own clock, so the API can show STOP a cycle before it does."""
    try:
        rows = [r for r in log_rows(directory) if not r["unknown"]]
    except (OSError, ValueError):  # no file flushed yet, or pyarrow's ArrowInvalid (a ValueError): asked again
        return False
    statuses = {name: {r["status"] for r in rows if r["group"] == g} for name, g in group.items()}
    return "ERR" in statuses["stall"] and "ERR" in statuses["stop"] and "WARN" in statuses["slow"]


@pytest.mark.parametrize("ingestion", ["consumer_offsets", "admin"])
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_new_protocol_groups_are_judged_as_classic_ones(
    kafka: KafkaHandle, tmp_path: Path, protocol: str, ingestion: str
) -> None:
    topic = kafka.create_topic(f"lag-{protocol}", partitions=1)
    produce(kafka, topic, 20, "seed")
    prefix = f"np-{protocol}-{ingestion}-{uuid.uuid4().hex[:6]}"
    group = {name: f"{prefix}-{name}" for name in WANT}
    log_dir = tmp_path / "lag-log"
    settings = {
        "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "lag": {
            "intervals": 3, "offset_refresh_s": 1, "stale_after_s": 10, "recovery_s": 0, "ingestion": ingestion,
            "group_allow": f"^{prefix}-", "metrics_per_member": True,
            "evaluation_log": {"dir": str(log_dir), "interval_s": 1, "flush_interval_s": 1, "partitions": True},
        },
    }  # fmt: skip
    config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
    registry = CollectorRegistry()
    runner = LagRunner(config, config.clusters, state=tmp_path / "state", registry=registry)
    api = serve_lag_api(runner.service, registry=registry)
    consumers = {name: member(kafka, group[name], protocol) for name in WANT}
    join(consumers, topic)
    seen: dict[str, set[Status]] = defaultdict(set)
    hwm = 20
    runner.start()
    try:
        service = runner.service
        rounds = itertools.count()

        def one_round() -> tuple[bool, dict[str, list[str]]]:
            """One round of commits (the groups' commit cadence); whether every group is judged as wanted, and
            every status seen so far."""
            nonlocal hwm
            rnd = next(rounds)
            produce(kafka, topic, 10, f"r{rnd}")
            hwm += 10
            for c in consumers.values():
                c.poll(0)  # serve the member's callbacks
            commit_offsets(consumers["ok"], [TopicPartition(topic, 0, hwm)])
            commit_offsets(consumers["slow"], [TopicPartition(topic, 0, 20 + 3 * rnd)])
            commit_offsets(consumers["stall"], [TopicPartition(topic, 0, 5)])
            if rnd < 3:
                commit_offsets(consumers["stop"], [TopicPartition(topic, 0, 10 + rnd)])
            elif rnd == 3:
                consumers.pop("stop").close()  # leaves the group: no member, no commit
            time.sleep(1.0)  # the groups' commit cadence
            statuses = {name: service.group_status(CLUSTER, group[name]) for name in WANT}
            for name, status in statuses.items():
                if status.partitions and status.partitions[0].end is not None:
                    seen[name].add(status.partitions[0].status)
            done = all(s.partitions and s.partitions[0].status is WANT[n] for n, s in statuses.items())
            return bool(done) and rnd + 1 > 5, {n: sorted(s.name for s in v) for n, v in seen.items()}

        poll(one_round, lambda result: result[0], 120, "every group judged as wanted", 0)
        assert seen["ok"] <= {Status.OK}, seen["ok"]  # the caught-up group was never judged otherwise

        store = service.store
        wait_until(lambda: store.members(CLUSTER, group["stop"]) == 0, 30)  # the leave is read after the commits
        assert {n: store.members(CLUSTER, g) for n, g in group.items()} == {"ok": 1, "slow": 1, "stall": 1, "stop": 0}

        with httpx.Client(base_url=api.url, timeout=10) as http:
            listed = set(http.get(f"/v3/kafka/{CLUSTER}/consumer").json()["consumers"])
            assert set(group.values()) <= listed
            for name in WANT:
                body = http.get(f"/v3/kafka/{CLUSTER}/consumer/{group[name]}/lag").json()["status"]  # every partition
                assert body["status"] == GROUP_STATUS[name], (name, body)
                partition = body["partitions"][0]
                assert partition["status"] == WANT[name].name
                if name != "stop":  # owners: Burrow's owner (client host) and client_id, from the group's members
                    assert partition["client_id"] == f"{group[name]}-client", (name, partition)
                    assert partition["owner"].endswith("127.0.0.1"), (name, partition)
            metrics = http.get("/metrics").text
        for name, members in {"stall": 1, "stop": 0}.items():
            labels = f'cluster="{CLUSTER}",consumer_group="{group[name]}"'
            assert f"kafka_pulse_lag_group_members{{{labels}}} {members}.0" in metrics
        assert f'burrow_kafka_consumer_status{{cluster="{CLUSTER}",consumer_group="{group["stall"]}"}} 3.0' in metrics
        worst = f'client_id="{group["stall"]}-client"'
        assert any(
            line.startswith("kafka_pulse_lag_member_max_lag{") and worst in line for line in metrics.splitlines()
        )

        lag_facts = read_lag(dev_cluster_config(kafka.cluster), kafka.bootstrap_servers.split(","), Deadline.after(30))
        assert isinstance(lag_facts, LagFacts), lag_facts
        snapshot = {g.group: g for g in lag_facts.groups}
        assert snapshot[group["stall"]].total_lag == hwm - 5  # check's lag section reads the group like any other
        assert snapshot[group["stall"]].state.lower() == "stable"
        assert snapshot[group["ok"]].total_lag == 0
        if ingestion == "consumer_offsets":
            source = runner.sources[0]
            assert source.decoded.get("UnknownRecord", 0) == 0 and source.decoded.get("Undecodable", 0) == 0
            if protocol == "consumer":
                assert source.decoded.get("ConsumerGroupAssignment", 0) > 0, source.decoded
        wait_until(partial(log_judged, log_dir / GROUPS, group), 60, interval_s=0.5)  # asserted below, after stop
    finally:
        for c in consumers.values():
            c.close()
        api.stop()
        runner.stop()  # writes what the evaluation log queued

    rows = [r for r in log_rows(log_dir / GROUPS) if not r["unknown"]]
    by_group = {name: {r["status"] for r in rows if r["group"] == g} for name, g in group.items()}
    assert by_group["ok"] == {"OK"}, by_group
    assert "ERR" in by_group["stall"] and "ERR" in by_group["stop"] and "WARN" in by_group["slow"], by_group
    partitions = log_rows(log_dir / PARTITIONS)
    assert any(r["status"] == "STOP" for r in partitions if r["group"] == group["stop"])


def test_share_groups_are_listed_not_judged(kafka: KafkaHandle, tmp_path: Path) -> None:
    """A share group reads through the share coordinator and commits nothing to `__consumer_offsets`: it appears
    in `kafka_pulse_lag_share_group` and never among the judged consumer groups."""
    topic = kafka.create_topic("lag-share", partitions=1)
    produce(kafka, topic, 10, "s")
    prefix = f"np-share-{uuid.uuid4().hex[:6]}"
    share_group = f"{prefix}-sg"
    settings = {
        "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "lag": {"offset_refresh_s": 1, "group_allow": f"^{prefix}-", "evaluation_log": {"enabled": False}},
    }
    config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
    registry = CollectorRegistry()
    runner = LagRunner(config, config.clusters, state=tmp_path / "state", registry=registry)
    share = ShareConsumer(kafka.client_config(**{"group.id": share_group}))
    share.subscribe([topic])
    runner.start()
    try:
        store = runner.service.store

        def listed() -> bool:
            share.poll(0.2)
            with runner.service.locked():
                return share_group in store.share_groups(CLUSTER)

        assert wait_until(listed, 60), "the share group never appeared"
        assert share_group not in runner.service.store.groups(CLUSTER)  # never judged
        text = generate_latest(registry).decode()
        assert f'kafka_pulse_lag_share_group{{cluster="{CLUSTER}",share_group="{share_group}"}} 1.0' in text
        assert runner.sources[0].decoded.get("UnknownRecord", 0) == 0
    finally:
        share.close()
        runner.stop()


def try_commit(consumer: Consumer, topic: str, offset: int) -> bool:
    """Commit if this member may (during a rebalance the coordinator refuses a member that lost the partition)."""
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    except KafkaException:
        return False
    return True


@pytest.mark.parametrize("ingestion", ["consumer_offsets", "admin"])
def test_a_group_upgraded_to_the_consumer_protocol_keeps_its_history(
    kafka: KafkaHandle, tmp_path: Path, ingestion: str
) -> None:
    """A rolling upgrade: a classic member commits, a `group.protocol=consumer` member joins (Kafka converts the
    group, writing a GroupMetadata tombstone and keeping the offsets), the classic member leaves. The group's window
    keeps the commits from before the upgrade, its owner becomes the new member, and it ends OK."""
    topic = kafka.create_topic("lag-upgrade", partitions=1)
    produce(kafka, topic, 20, "seed")
    prefix = f"np-upgrade-{uuid.uuid4().hex[:6]}"
    group = f"{prefix}-g"
    settings = {
        "clusters": [{"name": CLUSTER, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "lag": {
            "intervals": 30, "offset_refresh_s": 1, "stale_after_s": 10, "recovery_s": 0, "ingestion": ingestion,
            "group_allow": f"^{prefix}-", "evaluation_log": {"enabled": False},
        },
    }  # fmt: skip
    config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
    runner = LagRunner(config, config.clusters, state=tmp_path / "state", registry=CollectorRegistry())
    classic = kafka.consumer(group, **{"client.id": "classic-member"})
    join({"classic": classic}, topic)
    members: dict[str, Consumer] = {"classic": classic}
    hwm, upgraded_at_ms = 20, 0
    runner.start()
    try:
        store = runner.service.store
        rounds = itertools.count()

        def one_round() -> tuple[bool, Status, str, str]:
            """One commit round a second apart; the upgrade at round 5, the classic member gone at 8. Whether
            the new member owns the partition with an OK verdict, and the status, owner and reason seen."""
            nonlocal hwm, upgraded_at_ms
            rnd = next(rounds)
            produce(kafka, topic, 10, f"u{rnd}")
            hwm += 10
            for c in members.values():
                c.poll(0.1)
                if c.assignment():
                    try_commit(c, topic, hwm)
            if rnd == 5:
                upgraded_at_ms = runner.service.clock_ms()
                members["new"] = member(kafka, group, "consumer")
                members["new"].subscribe([topic])
            elif rnd == 8:
                members.pop("classic").close()
            time.sleep(1.0)
            status = runner.service.group_status(CLUSTER, group)
            owner = status.partitions[0].client_id if status.partitions else ""
            done = rnd + 1 > 12 and owner == f"{group}-client" and status.status is Status.OK
            return done, status.status, owner, status.reason

        poll(one_round, lambda result: result[0], 120, f"{group} owned by the new member and OK", interval_s=0)
        with runner.service.locked():
            slot = next(store.slots(CLUSTER, group))
            timestamps = store.commits.read(slot.slot)[1]
            assert min(timestamps) < upgraded_at_ms, "the commits from before the upgrade were dropped"
            assert store.members(CLUSTER, group) == 1
    finally:
        for c in members.values():
            c.close()
        runner.stop()
