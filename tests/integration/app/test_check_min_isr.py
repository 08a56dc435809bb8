"""`kafka-pulse check`'s under-min-ISR verdict against what Kafka does with an acks=all write, both ways.

A full ISR below `min.insync.replicas` (replication 2 with `min.insync.replicas=3` on the topic; replication 1 under
the dev cluster's broker default of 2) takes acks=all writes on Kafka 4.x, since the leader requires
min(min.insync.replicas, replicas) (apache/kafka#14594, Kafka 3.7): the check does not call it under min ISR. An
ISR that shrank below it (replication 2, `min.insync.replicas=2`, one replica's broker killed) refuses them with
NOT_ENOUGH_REPLICAS: the check calls it under min ISR, CRIT. Each verdict is shown right by a real produce."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import KafkaError, Message
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_pulse.clusters import dev_cluster_config
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle

REPO = Path(__file__).resolve().parents[3]
OUTER_BOUND_S = 60.0
VICTIM = 3


def run_check(config: Path, *options: str) -> tuple[int, dict[str, Any]]:
    """`kafka-pulse check --json` as a fresh process (with `options`); a generous --timeout, since the verdict is the
    point here."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = ["check", "--config", str(config), "--json", "--timeout", "30", *options]
    done = subprocess.run(
        [sys.executable, "-m", "kafka_pulse.cli.main", *argv],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=OUTER_BOUND_S,
    )  # fmt: skip
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def partitions_section(report: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == "partitions")


def listed(section: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The section's examples of `kind`, by topic (every topic here has one partition)."""
    return {p["topic"]: p for p in section["details"]["examples"][kind]}


def produce_error(kafka: KafkaHandle, topic: str) -> KafkaError | None:
    """One acks=all record, no retries: the broker's answer (None when written)."""
    outcome: list[KafkaError | None] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        outcome.append(error)

    producer = kafka.producer(**{"retries": 0, "message.timeout.ms": 20000})
    producer.produce(topic, value=b"x", on_delivery=delivered)
    producer.flush(30)
    assert len(outcome) == 1, f"no delivery report for {topic}"
    return outcome[0]


def delete(admin: AdminClient, topics: list[str]) -> None:
    """The cluster is the session's: leave no topic a later test's check would judge."""
    for future in admin.delete_topics(topics, operation_timeout=30).values():
        future.result(timeout=60)
    poll(lambda: set(admin.list_topics(timeout=10).topics), lambda names: not names & set(topics), 60, "deleted")


def write_config(kafka: KafkaHandle, tmp_path: Path) -> Path:
    config = tmp_path / "pulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": [dev_cluster_config(kafka.cluster).model_dump(mode="json")]}))
    return config


def test_a_full_isr_below_min_insync_replicas_still_takes_writes_and_is_not_flagged(
    kafka: KafkaHandle, tmp_path: Path
) -> None:
    narrow = kafka.create_topic("min-isr-narrow", partitions=1, replication_factor=2, **{"min.insync.replicas": "3"})
    lone = kafka.create_topic("min-isr-lone", partitions=1, replication_factor=1)  # broker default 2
    admin = kafka.admin()
    try:
        _, report = run_check(write_config(kafka, tmp_path))
        section = partitions_section(report)
        assert not {narrow, lone} & set(listed(section, "under_min_isr")), json.dumps(section, indent=1)
        assert not {narrow, lone} & set(listed(section, "under_replicated"))
        for topic in (narrow, lone):
            assert produce_error(kafka, topic) is None, topic  # the verdict is right: acks=all writes succeed
    finally:
        delete(admin, [narrow, lone])


def test_an_isr_shrunk_below_min_insync_replicas_is_crit_and_refuses_writes(kafka: KafkaHandle, tmp_path: Path) -> None:
    admin = kafka.admin()
    topic = f"min-isr-shrunk-{os.urandom(4).hex()}"
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[2, VICTIM]], config={"min.insync.replicas": "2"})])[
        topic
    ].result(timeout=30)
    config = write_config(kafka, tmp_path)
    try:
        poll(lambda: admin.list_topics(topic=topic, timeout=5).topics[topic].partitions.get(0), lambda p: p is not None
             and p.leader == 2 and sorted(p.isrs) == [2, VICTIM], 30, f"{topic} led by 2 with a full ISR")  # fmt: skip
        assert produce_error(kafka, topic) is None  # writable while both replicas are in sync
        kafka.cluster.kill(VICTIM)
        poll(lambda: admin.list_topics(topic=topic, timeout=5).topics[topic].partitions[0].isrs, lambda isr: isr == [2],
             60, f"the ISR of {topic} shrunk to broker 2")  # fmt: skip
        code, report = run_check(config)
        section = partitions_section(report)
        assert code == 2 and section["status"] == "CRIT", json.dumps(report, indent=1)
        shrunk = listed(section, "under_min_isr")[topic]
        assert (shrunk["isr"], shrunk["min_isr"]) == ([2], 2)
        assert any("under min ISR (acks=all produces fail)" in r and topic in r for r in section["reasons"])
        error = produce_error(kafka, topic)  # the verdict is right: acks=all writes fail
        assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS, error
    finally:
        if not kafka.cluster.is_running(VICTIM):
            kafka.cluster.restart(VICTIM, cache_dir())
        poll(lambda: admin.list_topics(timeout=10), lambda md: len(md.brokers) == 3 and all(
            len(p.isrs) == len(p.replicas) for t in md.topics.values() for p in t.partitions.values()
        ), 120, "every broker back and every ISR full")  # fmt: skip
        delete(admin, [topic])
