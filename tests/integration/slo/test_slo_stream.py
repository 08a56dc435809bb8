"""`slo stream` on real Kafka and Spark (local mode, Spark's own Kafka source): SLI events published in the sink's
encoding, some delivered twice and one of an unknown schema version, are bucketed per minute by the stream, which
then answers what `slo evaluate` answers over the same rows in Parquet; `slo evaluate --buckets` and `slo backtest
--buckets` over the stream's table answer as the batch job too. The stream runs as its own process
(`--once`: what the topic holds, then one evaluation), as an operator runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from confluent_kafka.admin import NewTopic
from pyspark.sql import SparkSession

from canary.sli_log import CANARY_STREAM, SCHEMA
from kafka_pulse.cli.main import cli
from pulse.polling import poll
from pulse.sli_sink import SpooledEvent, events_of
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.spark import SHORT_LIVED_DEFAULTS, T, iso

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
HOURS = 26
"""Events from T - 26 h to T: past the 1d ticket window, so every window the SLOs report holds data."""
STREAM_TIMEOUT_S = 600.0
"""A bound for the stream process (a JVM start, an Ivy lookup and a few micro-batches) on a loaded 2-core host."""


def canary_rows() -> list[dict[str, Any]]:
    """A probe every 20 s on each of clusters a and b. Cluster a fails every produce in [T-40m, T-10m); cluster b
    fails one probe in 97 and reads one in 13 back slower than 1 s."""
    rows: list[dict[str, Any]] = []
    for cluster in ("a", "b"):
        for i in range(HOURS * 180):
            sent = T - timedelta(hours=HOURS) + timedelta(seconds=20 * i)
            outage = cluster == "a" and T - timedelta(minutes=40) <= sent < T - timedelta(minutes=10)
            ok = not outage and not (cluster == "b" and i % 97 == 5)
            rows.append(
                {
                    "time": sent,
                    "cluster": cluster,
                    "target_cluster": None,
                    "topic": "__kafka_pulse_canary",
                    "partition": i % 3,
                    "broker": i % 3 + 1,
                    "rack": None,
                    "client_rack": None,
                    "producer_id": f"p-{cluster}",
                    "sequence": i,
                    "produce_ok": ok,
                    "produce_latency_s": 0.01 if ok else None,
                    "consume_ok": True if ok else None,
                    "e2e_latency_s": (1.5 if i % 13 == 0 else 0.05) if ok else None,
                    "lost": False,
                    "duplicate": False,
                    "out_of_order": False,
                    "error": None if ok else "NOT_ENOUGH_REPLICAS",
                    "offset": i if ok else None,
                }
            )
    return rows


@dataclass
class Published:
    config: Path
    state: Path
    topic: str


def publish(kafka: KafkaHandle, root: Path, partitions: int = 3) -> tuple[Published, str, list[SpooledEvent]]:
    """The rows in Parquet under `root` (the batch job's source), a fresh `<prefix>canary` topic of `partitions`
    and a config naming both; returns the config, the topic and the rows as the sink's events (not produced yet)."""
    table = pa.Table.from_pylist(canary_rows(), schema=SCHEMA)
    (root / "canary").mkdir()
    pq.write_table(table, root / "canary" / "part-0.parquet")
    prefix = f"kp-sli-{uuid.uuid4().hex[:8]}-"
    topic = prefix + "canary"
    admin = kafka.admin()
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(timeout=30)
    poll(
        lambda: admin.list_topics(topic=topic, timeout=5).topics.get(topic),
        lambda md: _led(md, partitions),
        30,
        f"leaders of {topic}",
    )
    slos = [
        {
            "name": "produce",
            "source": {"type": "events", "path": "canary"},
            "good": "produce_ok",
            "total": "NOT duplicate",
            "group_by": ["cluster"],
            "objective": 99.0,
            "window": "30d",
        },
        {
            "name": "e2e-b",
            "source": {"type": "events", "path": "canary", "filter": "cluster = 'b'"},
            "good": "consume_ok AND e2e_latency_s <= 1.0",
            "total": "NOT duplicate",
            "objective": 95.0,
            "window": "30d",
            "budgeting": {"method": "timeslices", "slice": "1m", "slice_target": 90},
        },
    ]
    config = {
        "clusters": [{"name": "sli", "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "sli_sink": {"cluster": "sli", "topic_prefix": prefix},
        "slo": {"spark_master": "local[2]", "driver_memory": "1g"},
        "slos": slos,
    }
    path = root / "pulse.yaml"
    path.write_text(yaml.safe_dump(config))
    return Published(path, root / "stream-state", topic), topic, events_of(CANARY_STREAM, table, "0badc0de", 0)


def produce(
    kafka: KafkaHandle,
    topic: str,
    events: Sequence[SpooledEvent],
    extra: Sequence[tuple[SpooledEvent, int]] = (),
    partition_of_key: Mapping[bytes, int] | None = None,
) -> None:
    """`events` as the sink sends them, then each of `extra` with its schema version replaced; `partition_of_key`
    places `events` by record key instead of the producer's partitioner."""
    producer = kafka.producer()
    for event in events:
        partition = -1 if partition_of_key is None else partition_of_key[event.key]  # -1: the partitioner's choice
        producer.produce(topic, key=event.key, value=event.value, partition=partition, headers=event.headers())
    for event, version in extra:
        headers = [(k, str(version).encode() if k == "kp-schema-version" else v) for k, v in event.headers()]
        producer.produce(topic, key=event.key, value=event.value, headers=headers)
    assert producer.flush(60) == 0


@pytest.fixture(scope="module")
def published(kafka: KafkaHandle, tmp_path_factory: pytest.TempPathFactory) -> Published:
    """Every event once, the first 300 twice (a redelivery after a crash), and one of an unknown schema version."""
    found, topic, events = publish(kafka, tmp_path_factory.mktemp("slo-stream"))
    stranger = SpooledEvent("canary", 1, "feedf00d", 0, events[0].key, events[0].value)
    produce(kafka, topic, [*events, *events[:300]], [(stranger, 2)])
    return found


@pytest.fixture(scope="module")
def first_stream(published: Published) -> dict[str, Any]:
    """The stream's first `--once` answer on the module's state: it has then seen every published event. Its two
    users share the one run (a JVM start and the whole topic) instead of each starting one."""
    return run_stream(published)


def _led(md: Any, partitions: int) -> bool:
    return (
        md is not None
        and md.error is None
        and len(md.partitions) == partitions
        and all(p.leader >= 0 for p in md.partitions.values())
    )


def stream_argv(published: Published, *more: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment of `slo stream` on `published`; Spark's defaults file (SPARK_CONF_DIR) gives its
    JVMs, which live for a few micro-batches, the short-lived options (tests/fixtures/spark.py)."""
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "slo", "stream", "--config", str(published.config)]
    conf_dir = published.state.parent / "stream-spark-conf"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "spark-defaults.conf").write_text(SHORT_LIVED_DEFAULTS)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KAFKA_PULSE_HOME": str(published.state.parent / "home")}
    env["SPARK_CONF_DIR"] = str(conf_dir)
    return [*argv, "--state-dir", str(published.state), "--json", *more], env


def run_stream(published: Published) -> dict[str, Any]:
    """`slo stream --once --at T --json` as its own process (its own JVM with the Kafka source on its classpath)."""
    return run_stream_logged(published)[0]


def run_stream_logged(published: Published) -> tuple[dict[str, Any], str]:
    """`run_stream`'s answer and the stream's stderr."""
    argv, env = stream_argv(published, "--once", "--at", iso(T))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=STREAM_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{") :])
    return found, done.stderr


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.output)
    return found


def test_the_stream_answers_as_the_batch_job_on_the_same_events(
    published: Published, first_stream: dict[str, Any], spark: SparkSession
) -> None:
    streamed = first_stream
    batch = cli_json("slo", "evaluate", "--config", str(published.config), "--at", iso(T))
    assert streamed == batch
    names = [(s["name"], s["labels"]) for s in batch["slos"]]
    assert names == [("produce", {"cluster": "a"}), ("produce", {"cluster": "b"}), ("e2e-b", {})]
    firing = {(s["name"], s["labels"].get("cluster")): [a["firing"] for a in s["alerts"]] for s in batch["slos"]}
    assert firing[("produce", "a")][0] is True  # the outage pages, so the comparison covers firing states
    assert firing[("produce", "b")][0] is False, batch["slos"][1]
    buckets = str(published.state / "buckets")
    from_table = cli_json("slo", "evaluate", "--config", str(published.config), "--at", iso(T), "--buckets", buckets)
    assert from_table == batch
    window = ["--from", iso(T - timedelta(hours=3)), "--to", iso(T), "--step", "1m"]
    backtest = cli_json("slo", "backtest", "--config", str(published.config), *window)
    assert cli_json("slo", "backtest", "--config", str(published.config), *window, "--buckets", buckets) == backtest
    assert any(s["alerts"] for s in backtest["slos"])


def test_a_late_event_within_the_watermark_counts_and_a_later_one_is_counted_as_dropped(
    kafka: KafkaHandle, published: Published, first_stream: dict[str, Any]
) -> None:
    # first_stream: the stream has seen every published event (the state is the module's)
    newest = max(r["time"] for r in canary_rows())
    first = canary_rows()[0]
    late = [
        {**first, "time": newest - timedelta(minutes=1), "cluster": "late-within", "sequence": 1},
        {**first, "time": newest - timedelta(minutes=10), "cluster": "late-beyond", "sequence": 2},
    ]
    produce(kafka, published.topic, events_of(CANARY_STREAM, pa.Table.from_pylist(late, schema=SCHEMA), "1a7e", 0))
    streamed, log = run_stream_logged(published)
    clusters = {s["labels"].get("cluster") for s in streamed["slos"] if s["name"] == "produce"}
    assert "late-within" in clusters and "late-beyond" not in clusters, clusters
    assert "events later than the watermark (2m), not counted since the start: 1" in log, log[-3000:]


def children(pid: int) -> list[int]:
    """The direct children of `pid` (the driver's JVM), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(c) for c in text.split()]
    return found


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def test_a_driver_killed_with_sigkill_resumes_from_its_checkpoint_and_counts_nothing_twice(
    kafka: KafkaHandle, spark: SparkSession, tmp_path: Path
) -> None:
    # The live stream takes the first half of the events (in time order) in its first batch; the second half
    # arrives, with 200 early events delivered again (older than the watermark by then); the driver is killed
    # with -9 as soon as a batch of them is written, maybe before Spark committed it. `--once` on the same
    # state resumes from the checkpoint (batch 0 is not redone) and answers as the batch job over the rows.
    # One partition: a micro-batch that starts while the second half is being produced would otherwise take one
    # partition to its end and another only part-way, and the next batch's watermark (the first's newest event
    # less 2 minutes) would drop the rest of the second as late, as it should (seen on main under load 3.5).
    found, topic, events = publish(kafka, tmp_path, partitions=1)
    ordered = sorted(events, key=lambda e: str(json.loads(e.value)["time"]))
    half = len(ordered) // 2
    produce(kafka, topic, ordered[:half])
    buckets = found.state / "buckets"
    argv, env = stream_argv(found, "--trigger", "2s")
    with open(tmp_path / "stream.log", "w") as log:
        driver = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    jvms: list[int] = []
    try:
        first = poll(lambda: sorted(buckets.glob("part-*.parquet")), bool, STREAM_TIMEOUT_S, "the stream's first batch")
        assert [p.name for p in first] == ["part-000000000000.parquet"]
        written = first[0].stat().st_mtime_ns
        produce(kafka, topic, [*ordered[half:], *ordered[:200]])
        poll(lambda: set(buckets.glob("part-*.parquet")) - set(first), bool, STREAM_TIMEOUT_S, "a later batch")
        jvms = children(driver.pid)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=30)
    # Spark's JVM exits when its driver's pipe closes; the restart must not share the checkpoint with it.
    poll(lambda: all(gone(pid) for pid in jvms), bool, 60, "the killed driver's JVM to exit")
    streamed = run_stream(found)
    assert (buckets / "part-000000000000.parquet").stat().st_mtime_ns == written  # resumed, not restarted
    batch = cli_json("slo", "evaluate", "--config", str(found.config), "--at", iso(T))
    assert streamed == batch
    from_table = cli_json("slo", "evaluate", "--config", str(found.config), "--at", iso(T), "--buckets", str(buckets))
    assert from_table == batch
