"""Tiered storage on a real 1-node 4.x cluster started as `dev up --tiered-storage` starts one (Kafka's own
LocalTieredStorage from the kafka-storage test jar), read by a real `kafka-pulse run` and judged by the rules of
examples/prometheus-health/tiered-storage.rules.yml in a real Prometheus.

A topic of 1 MiB segments and local retention of 1 byte has its closed segments copied and deleted locally; a group
committed at offset 0 is then recorded as reading the remote tier while a caught-up group is not, and the copy lag
stays within the topic's allowance (one segment plus local retention). Then the remote tier is broken (its directory
replaced by a file): copies fail, the copy lag grows past the allowance, and the copy-lag and copy-error rules'
conditions hold on the real series (their `for` is minutes, so the conditions are queried, not the alerts)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import TopicPartition

from devstack.prometheus import Prometheus, ScrapeTarget
from devstack.tiered_storage import REMOTE_DIR, TIERED_STORAGE_VERSION
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.polling import poll
from tests.fixtures.kafka import KafkaHandle, commit_offsets
from tests.fixtures.kafka import _start as start_cluster
from tests.fixtures.pulse_process import PulseProcesses

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
RULES = REPO / "examples" / "prometheus-health" / "tiered-storage.rules.yml"
CLUSTER = "tiered"
SEGMENT = 1 << 20
RECORD = b"x" * 1000
DATA_TIMEOUT_S = 180.0
"""Copy tasks run every 2 s and local retention every 5 s; the rest is scrapes, rule evaluations and a loaded host."""


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaHandle]:
    """A 1-node cluster with remote storage on, planned as `dev up --tiered-storage` plans it."""
    home = tmp_path_factory.mktemp("kafka-tiered")
    yield from start_cluster(home, 1, TIERED_STORAGE_VERSION, Security.PLAINTEXT, "kafka-tiered", tiered_storage=True)


def produce(kafka: KafkaHandle, topic: str, records: int) -> None:
    producer = kafka.producer(**{"linger.ms": 20})
    for i in range(records):
        producer.produce(topic, RECORD, partition=0)
        if i % 500 == 499:
            producer.flush(30)
    assert producer.flush(30) == 0


def values(prometheus: Prometheus, expr: str) -> dict[str, float]:
    """An instant query's result as {the series' `consumer_group` or `topic` (else ""): value}."""
    out = {}
    for series in prometheus.query(expr):
        labels = series["metric"]
        out[labels.get("consumer_group", labels.get("topic", ""))] = float(series["value"][1])
    return out


def run_config(kafka: KafkaHandle) -> dict[str, Any]:
    cluster = dev_cluster_config(kafka.cluster, name=CLUSTER).model_dump(mode="json")
    cluster["jmx"]["timeout_s"] = 30
    return {
        "clusters": [cluster],
        "collectors": {"transport": "jpype", "scrape_interval_s": 1, "topic_metrics": "topic"},
        "canary": {"enabled": False},
        "lag": {"offset_refresh_s": 1},
    }


def test_a_tiered_topic_is_copied_and_judged_and_a_group_behind_local_data_reads_the_remote_tier(
    tiered: KafkaHandle, prometheus: Prometheus, pulse_process: PulseProcesses
) -> None:
    settings = {"remote.storage.enable": "true", "segment.bytes": str(SEGMENT), "local.retention.bytes": "1"}
    topic = tiered.create_topic("tiered", 1, 1, **settings)
    produce(tiered, topic, 4000)  # about 4 MiB: three closed segments, copied then deleted locally
    probe = tiered.consumer("probe")
    end = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    probe.close()
    for group, offset in (("tiered-replay", 0), ("tiered-live", end)):
        consumer = tiered.consumer(group)
        commit_offsets(consumer, [TopicPartition(topic, 0, offset)])
        consumer.close()
    selector = f'cluster="{CLUSTER}", topic="{topic}"'
    with pulse_process.start("run", run_config(tiered)) as run:
        targets = [ScrapeTarget("tiered-run", (f"127.0.0.1:{run.port}",))]
        with prometheus.extended(targets=targets, rule_files=[RULES]):
            # Healthy: segments copied and deleted locally, so the replaying group reads the remote tier.
            remote = poll(
                lambda: values(prometheus, f"kafka_pulse:consumer_group_remote_tier_partitions{{{selector}}}"),
                lambda v: v == {"tiered-replay": 1.0},
                DATA_TIMEOUT_S,
                "tiered-replay, and only it, recorded as reading the remote tier",
                interval_s=2.0,
            )
            assert remote == {"tiered-replay": 1.0}
            earliest = values(prometheus, f"kafka_pulse_cluster_partition_earliest_local_offset{{{selector}}}")
            assert 0 < earliest[topic] <= end, earliest
            allowed = values(prometheus, f"kafka_pulse_cluster_topic_remote_copy_lag_allowed_bytes{{{selector}}}")
            assert allowed == {topic: float(SEGMENT + 1)}, allowed  # 4.3: local.retention.bytes + one segment
            copied = values(prometheus, f"kafka_server_brokertopicmetrics_remotecopybytes_total{{{selector}}}")
            assert copied[topic] >= 3 * SEGMENT * 0.9, copied
            lag = values(prometheus, f"kafka_server_brokertopicmetrics_remotecopylagbytes{{{selector}}}")
            assert 0 <= lag[topic] <= allowed[topic], (lag, allowed)
            copy_lag_rule = next(r["expr"] for r in _rules() if r.get("alert") == "KafkaRemoteCopyLagAboveAllowance")
            assert values(prometheus, copy_lag_rule) == {}, "copy lag within the allowance must not be judged"
            # Broken remote tier: copies fail, closed segments pile up locally past the allowance.
            storage = tiered.cluster.home / REMOTE_DIR / "kafka-tiered-storage"
            shutil.rmtree(storage)
            storage.write_text("not a directory: every copy to the remote tier fails\n")
            produce(tiered, topic, 4000)
            over = poll(
                lambda: values(prometheus, copy_lag_rule),
                lambda v: topic in v,
                DATA_TIMEOUT_S,
                f"the copy-lag rule's condition on {topic}",
                interval_s=2.0,
            )
            assert over[topic] > SEGMENT + 1, over
            errors = next(r["expr"] for r in _rules() if r.get("alert") == "KafkaRemoteCopyErrors")
            ratio = poll(
                lambda: values(prometheus, errors),
                lambda v: "" in v,
                DATA_TIMEOUT_S,
                "the copy-error rule's condition",
                2.0,
            )
            assert 0.05 < ratio[""] <= 1.0, ratio
        assert run.alive(), "kafka-pulse run exited during the test; see its log"


def _rules() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
