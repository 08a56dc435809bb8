"""`slo stream` past one machine's layout: the driver on a Spark standalone master with two one-core workers
(tests/fixtures/spark.py), its checkpoint and bucket table at a `file://` URL handed to Spark as written, and the
SLOs' `path` pointing nowhere (a streamed SLO needs no Parquet). Spark's own event log shows where the work ran:
the Kafka partitions were read by tasks on the executors of both workers, none on the driver, and the table's
files were written by executor tasks; a restart on the same URL refills its sums from that table. What one machine
cannot show (no shared mount needed) is in docs/slo.md.

Which executor reads a Kafka partition is Spark's Kafka source's choice, not the scheduler's luck: it prefers, for
each topic-partition, executor number `TopicPartition.hashCode mod n` of the n executors registered when the batch
is planned, and the scheduler keeps a task on its preferred executor for `spark.locality.wait` (3 s). So the test
makes both hold by construction: the driver waits for both executors before it schedules anything, and cluster
a's events go to partition 0, b's to partition 1, whose hash codes differ by 31 (an odd number), so they prefer
different executors of two whatever the topic's name. The producer's own partitioner put them on partitions 0 and 2
of three, both preferring one executor: the other read a partition only when the first task outlasted the locality
wait, which a CI run under load did not (every scan task on executor 0).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from devstack.spark_standalone import SparkStandalone
from tests.fixtures.kafka import KafkaHandle
from tests.fixtures.spark import SHORT_LIVED_DEFAULTS, WORKERS, T, iso
from tests.integration.slo.test_slo_stream import STREAM_TIMEOUT_S, cli_json, produce, publish, stream_argv

pytestmark = pytest.mark.integration

PARTITION_OF_CLUSTER = {b"a": 0, b"b": 1}
"""The record key (the SLI's cluster) -> its partition: adjacent partitions, preferred by different executors."""
WAIT_FOR_EXECUTORS = (
    f"spark.cores.max {WORKERS}\n"
    "spark.scheduler.minRegisteredResourcesRatio 1.0\n"
    "spark.scheduler.maxRegisteredResourcesWaitingTime 300s\n"
)
"""spark-defaults.conf lines that hold the driver's first job until both one-core executors have registered
(standalone expects `spark.cores.max` cores and waits for none by default; the wait is bounded for a loaded host)."""


def spark_events(log_dir: Path) -> Iterator[dict[str, Any]]:
    """Every listener event of the applications that logged under `log_dir` (spark.eventLog.*; Spark 4 writes
    a directory per application with `events_<n>_<app>` files in it; v1 logs are one `app-...` file)."""
    for path in sorted(p for p in log_dir.rglob("*") if p.is_file() and p.name.startswith(("events_", "app-"))):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield json.loads(line)


def scan_stages(events: list[dict[str, Any]]) -> set[int]:
    """Stages whose RDDs include the Kafka source's micro-batch scan."""
    found: set[int] = set()
    for event in events:
        if event["Event"] == "SparkListenerStageSubmitted":
            info = event["Stage Info"]
            scopes = " ".join(str(rdd.get("Scope", "")) + " " + str(rdd.get("Name", "")) for rdd in info["RDD Info"])
            if "MicroBatchScan" in scopes:
                found.add(int(info["Stage ID"]))
    return found


def test_the_stream_on_a_standalone_cluster_reads_kafka_on_the_executors_and_keeps_its_table_at_a_url(
    kafka: KafkaHandle, spark: SparkSession, spark_standalone: SparkStandalone, tmp_path: Path
) -> None:
    found, topic, events = publish(kafka, tmp_path, partitions=len(PARTITION_OF_CLUSTER))
    produce(kafka, topic, events, partition_of_key=PARTITION_OF_CLUSTER)
    # The stream's own config: the standalone master, and `path` where no Parquet is (the batch job's config,
    # found.config, keeps its Parquet for the comparison).
    body = yaml.safe_load(found.config.read_text())
    body["slo"] |= {"spark_master": spark_standalone.master_url, "driver_memory": "1g"}
    for entry in body["slos"]:
        entry["source"]["path"] = "no-parquet-here"
    streamed_config = tmp_path / "stream.yaml"
    streamed_config.write_text(yaml.safe_dump(body))
    # Spark's event log through its own defaults file (SPARK_CONF_DIR), read by the driver's spark-submit, with
    # the short-lived JVMs' options the other stream tests get (tests/fixtures/spark.py) and the wait for both
    # executors, as an operator sets them (docs/slo.md).
    conf_dir, log_dir = tmp_path / "spark-conf", tmp_path / "spark-events"
    conf_dir.mkdir()
    log_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir file://{log_dir}\nspark.eventLog.compress false\n"
        + SHORT_LIVED_DEFAULTS
        + WAIT_FOR_EXECUTORS
    )
    state_url = f"file://{tmp_path}/remote-state"
    argv, env = stream_argv(found, "--once", "--at", iso(T))
    argv[argv.index("--config") + 1] = str(streamed_config)
    argv[argv.index("--state-dir") + 1] = state_url
    env["SPARK_CONF_DIR"] = str(conf_dir)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=STREAM_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"checkpoint and bucket table under {state_url}" in done.stderr
    streamed = json.loads(done.stdout[done.stdout.index("{") :])

    batch = cli_json("slo", "evaluate", "--config", str(found.config), "--at", iso(T))
    assert streamed == batch
    assert any(a["firing"] for s in batch["slos"] for a in s["alerts"])  # the comparison covers a firing alert
    table = tmp_path / "remote-state" / "buckets"
    assert sorted(p.name for p in table.iterdir() if p.name.startswith("part-"))  # one directory per batch
    from_table = cli_json("slo", "evaluate", "--config", str(found.config), "--at", iso(T), "--buckets", str(table))
    assert from_table == batch
    assert (tmp_path / "remote-state" / "checkpoint" / "offsets").is_dir()

    logged = list(spark_events(log_dir))
    executors = {
        e["Executor ID"]: e["Executor Info"]["Log Urls"]["stdout"]
        for e in logged
        if e["Event"] == "SparkListenerExecutorAdded"
    }
    workers = [w["webuiaddress"] for w in spark_standalone.status()["workers"]]
    # One executor on each worker: each executor's log is served by its worker's web UI.
    assert len(executors) == 2 and "driver" not in executors
    assert sorted(next(w for w in workers if url.startswith(w)) for url in executors.values()) == sorted(workers)
    tasks = [e for e in logged if e["Event"] == "SparkListenerTaskEnd"]
    scans = scan_stages(logged)
    assert scans, "no stage read the Kafka source"
    read_on = {t["Task Info"]["Executor ID"] for t in tasks if t["Stage ID"] in scans}
    assert read_on == set(executors), read_on  # the partitions were read on both workers, nothing on the driver
    assert {t["Task Info"]["Executor ID"] for t in tasks} <= set(executors)
    written = [t for t in tasks if t.get("Task Metrics", {}).get("Output Metrics", {}).get("Records Written", 0)]
    assert written and {t["Task Info"]["Executor ID"] for t in written} <= set(executors)

    # A restart on the same URL: nothing new on the topic, the sums refilled from the table through Spark's reader.
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=STREAM_TIMEOUT_S, check=False)
    assert again.returncode == 0, again.stderr[-4000:]
    assert json.loads(again.stdout[again.stdout.index("{") :]) == batch
