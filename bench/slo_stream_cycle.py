"""The stream's side of bench/slo_bench.py: `slo stream`'s engine (slo/stream.py) on the bench's 1,000 SLOs x 30
days, warm, against the batch job's rescan and pandas.

The 30 days reach the stream as a bucket table it wrote before (`history_table`: the bench's per-minute rows as
buckets), so a start refills them as a restart would; new SLI events then arrive on a real Kafka topic in the
audit's row encoding (one row per SLO instance and minute, as the broker-side audit publishes them):
- a backlog of `backlog` events, then a second one while the query runs: events per second per core, from Spark's
  own progress of the micro-batches that read them;
- `cycles` warm cycles of one new minute (one event per instance): the micro-batch (Spark's `triggerExecution`)
  and the evaluation of every instance at that minute's end, each timed.
"""

from __future__ import annotations

import resource
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

STREAM_CORES = 2
"""The stream's session is `local[2]`: its executors are two threads of the driver's JVM."""


def stream_spec(at_path: str) -> list[Any]:
    """The bench's SLOs as a streamed audit source: one instance per `group` (the bench's `slo` label)."""
    return [
        {
            "name": "bench",
            "source": {"type": "audit", "path": at_path},
            "good": "records_passed",
            "total": "records_written",
            "objective": 99.9,
            "window": "30d",
            "group_by": ["group"],
        }
    ]


def history_table(data: Path, directory: Path) -> int:
    """The bench's rows as the bucket table a stream running for the 30 days would have written (one file)."""
    from slo.buckets import BUCKET_SCHEMA

    table = pq.read_table(data, columns=["time", "slo", "good", "total"])
    rows = int(table.num_rows)
    buckets = pa.table(
        {
            "slo": pc.cast(pa.DictionaryArray.from_arrays(np.zeros(rows, np.int32), pa.array(["bench"])), pa.string()),
            "instance": table["slo"].cast(pa.string()),
            "minute": table["time"],
            "rows": pa.array(np.ones(rows, dtype=np.int64)),
            "good": pc.cast(table["good"], pa.float64()),
            "total": pc.cast(table["total"], pa.float64()),
            "n_bad_value": pa.array(np.zeros(rows, dtype=np.int64)),
            "n_good_exceeds_total": pa.array(np.zeros(rows, dtype=np.int64)),
            "batch": pa.array(np.full(rows, -1, dtype=np.int64)),
        },
        schema=BUCKET_SCHEMA,
    )
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(buckets, directory / "history.parquet", compression="zstd")
    return rows


def audit_rows(slos: int, minute: datetime, per_instance: int, seed: int) -> pa.Table:
    """`per_instance` audit rows per SLO instance in `minute` (99.95% good on average)."""
    from audit.streams import BROKER_SCHEMA

    rng = np.random.default_rng(seed)
    count = slos * per_instance
    written = rng.poisson(1000, count).astype(np.int64)
    passed = written - rng.binomial(written, 0.0005)
    offsets = rng.integers(0, 60_000_000, count)
    start_us = int(minute.timestamp()) * 1_000_000
    return pa.table(
        {
            "time": pa.array(start_us + offsets, pa.timestamp("us", tz="UTC")),
            "cluster": ["bench"] * count,
            "group": [f"slo-{i % slos:04d}" for i in range(count)],
            "topic": ["t"] * count,
            "minute": pa.array(np.full(count, start_us), pa.timestamp("us", tz="UTC")),
            "records_written": written,
            "records_passed": passed,
            "completeness": passed / np.maximum(written, 1),
            "complete": passed == written,
            "passed_time": pa.nulls(count, pa.timestamp("us", tz="UTC")),
            "latency_s": pa.nulls(count, pa.float64()),
        },
        schema=BROKER_SCHEMA,
    )


def _produce(bootstrap: str, topic: str, table: pa.Table, first_seq: int) -> None:
    from confluent_kafka import Producer

    from audit.streams import BROKER_STREAM
    from pulse.sli_sink import events_of

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "zstd"})
    for event in events_of(BROKER_STREAM, table, "bench", first_seq):
        while True:
            try:
                producer.produce(topic, key=event.key, value=event.value, headers=event.headers())
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise SystemExit("events not delivered to the bench topic")


def _batches_after(query: Any, seen: int) -> list[dict[str, Any]]:
    import json

    return [p for p in (json.loads(x.json) for x in query.recentProgress) if int(p["batchId"]) > seen]


def _await_rows(query: Any, seen: int, rows: int, timeout_s: float = 600) -> tuple[list[dict[str, Any]], int]:
    """The progress of the micro-batches after `seen` until `rows` input rows were read; the newest batch id."""
    deadline = time.monotonic() + timeout_s
    while True:
        batches = _batches_after(query, seen)
        if sum(int(b["numInputRows"]) for b in batches) >= rows:
            return batches, max(int(b["batchId"]) for b in batches)
        if query.exception() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the stream read {sum(int(b['numInputRows']) for b in batches)} of {rows} rows")
        time.sleep(0.05)


def _phases(batches: list[dict[str, Any]]) -> dict[str, float]:
    """Spark's own split of the micro-batches' time (`durationMs`: addBatch, queryPlanning, walCommit, ...), in
    seconds summed over `batches`; `batches` counts them."""
    found: dict[str, float] = {"batches": float(len(batches))}
    for batch in batches:
        for name, ms in batch["durationMs"].items():
            found[name] = found.get(name, 0.0) + float(ms) / 1000
    return found


def run_stream(
    data: Path,
    bootstrap: str,
    master: str,
    slos: int,
    at: datetime,
    cycles: int,
    backlog: int,
    digest: Callable[[list[Any]], dict[str, Any]],
) -> dict[str, Any]:
    """The stream engine in this process; its figures and the `digest` (slo_bench's, which every engine's results
    go through) of its evaluation at `at` (before any new event: the refilled 30 days, which must agree with the
    batch job's)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from audit.streams import BROKER_STREAM
    from pulse.paths import cache_dir
    from slo import BucketStream, StreamSettings, Topic, package_settings, spark_session
    from slo.spec import parse_slos

    scratch = Path(tempfile.mkdtemp(prefix="slo-stream-bench-"))
    history_rows = history_table(data, scratch / "buckets")
    topic_name = f"kp-bench-{uuid.uuid4().hex[:8]}-{BROKER_STREAM.name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic_name, STREAM_CORES, 1)])[topic_name].result(timeout=30)
    specs = parse_slos([("bench", stream_spec(str(scratch / "no-parquet")))], None, check_sources=False)
    topics = {"audit": Topic(topic_name, BROKER_STREAM.name, BROKER_STREAM.version, BROKER_STREAM.schema)}
    settings = StreamSettings(
        kafka={"kafka.bootstrap.servers": bootstrap, "kafka.security.protocol": "PLAINTEXT"},
        checkpoint=str(scratch / "checkpoint"),
        buckets=str(scratch / "buckets"),
        trigger_s=0.5,
    )
    spark = spark_session(master, extra=package_settings(cache_dir()) | {"spark.sql.shuffle.partitions": "2"})
    stream = BucketStream(specs, settings)
    t0 = time.perf_counter()
    query = stream.start(spark, topics)
    refill_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    agreed = digest(stream.evaluate(at))
    first_eval_s = time.perf_counter() - t1

    # Backlogs: the first read by a cold query (JIT, Kafka connections), the second by a warm one.
    per_minute = max(1, backlog // (slos * 10))
    throughput: list[dict[str, float]] = []
    seen, seq, minute = -1, 0, at
    for chunk in range(2):
        table = pa.concat_tables(
            [audit_rows(slos, minute + timedelta(minutes=m), per_minute, 100 * chunk + m) for m in range(10)]
        )
        produced_at = time.perf_counter()
        _produce(bootstrap, topic_name, table, seq)
        produce_s = time.perf_counter() - produced_at
        seq += table.num_rows
        minute += timedelta(minutes=10)
        batches, seen = _await_rows(query, seen, table.num_rows)
        busy_s = sum(float(b["durationMs"]["triggerExecution"]) for b in batches) / 1000
        rows = sum(int(b["numInputRows"]) for b in batches)
        throughput.append(
            {"events": rows, "batches": len(batches), "busy_s": busy_s, "per_core_s": rows / busy_s / STREAM_CORES}
        )
        throughput[-1]["produce_s"] = produce_s

    # Warm cycles: one minute of events (one per instance), its micro-batch, then every instance evaluated.
    batch_s: list[float] = []
    phases: list[dict[str, float]] = []
    eval_s: list[float] = []
    eval_cpu_s: list[float] = []
    for cycle in range(cycles):
        _produce(bootstrap, topic_name, audit_rows(slos, minute, 1, 1000 + cycle), seq)
        seq += slos
        batches, seen = _await_rows(query, seen, slos)
        batch_s.append(sum(float(b["durationMs"]["triggerExecution"]) for b in batches) / 1000)
        phases.append(_phases(batches))
        minute += timedelta(minutes=1)
        t2, c2 = time.perf_counter(), time.thread_time()
        results = stream.evaluate(minute)
        eval_s.append(time.perf_counter() - t2)
        eval_cpu_s.append(time.thread_time() - c2)
        assert len(results) == slos, len(results)
    query.stop()
    spark.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    return {
        "history_buckets": history_rows,
        "refill_s": refill_s,
        "first_eval_s": first_eval_s,
        "throughput": throughput,
        "cycle_batch_s": batch_s,
        "cycle_eval_s": eval_s,
        "cycle_eval_cpu_s": eval_cpu_s,
        "cycle_phases_s": phases,
        "cycle_median_s": statistics.median(b + e for b, e in zip(batch_s, eval_s, strict=True)),
        "python_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "instances": len(agreed),
        "digest": agreed,
        "at": at.astimezone(UTC).isoformat(),
    }


# --- parent side -------------------------------------------------------------------------------------------------


def measure_stream(
    argv: list[str], args: Any, measure: Callable[..., Any]
) -> tuple[dict[str, Any], float, float, float]:
    """Start a 1-node Kafka (outside the measured tree), run the stream child through `measure` (slo_bench's, as for
    every engine); (its result, wall, peak tree RSS in MiB, tree CPU seconds)."""
    from devstack.cluster import DevCluster
    from devstack.runtime import DEFAULT_VERSION
    from devstack.topology import Security
    from pulse.paths import cache_dir

    with tempfile.TemporaryDirectory(prefix="slo-stream-kafka-") as home:
        cluster = DevCluster.plan(Path(home) / "dev", 1, DEFAULT_VERSION, Security.PLAINTEXT)
        cluster.up(cache_dir())
        try:
            more = ["--bootstrap", cluster.spec.bootstrap_servers, "--cycles", str(args.cycles)]
            stderr = Path(tempfile.gettempdir()) / "slo-bench-stream.stderr"
            print(f"stream engine's stderr: {stderr}")
            result, wall, mib, cpu, _ = measure([*argv, *more, "--backlog", str(args.backlog)], stderr_to=stderr)
        finally:
            cluster.down()
    return result, wall, mib, cpu


def report_stream(run: tuple[dict[str, Any], float, float, float], pandas_s: float, warm_batch_s: float) -> None:
    """The stream's figures as markdown, beside the batch job's warm re-run and pandas."""
    result, wall, mib, cpu = run
    cycles = [b + e for b, e in zip(result["cycle_batch_s"], result["cycle_eval_s"], strict=True)]
    print(
        f"\nstream (local[{STREAM_CORES}]): refilled {result['history_buckets']:,} buckets in "
        f"{result['refill_s']:.1f} s (query start included); first evaluation {result['first_eval_s']:.2f} s; "
        f"process wall {wall:.1f} s, "
        f"CPU {cpu:.1f} s, peak RSS {mib:.0f} MiB (driver JVM with its executor threads + Python), "
        f"Python alone {result['python_peak_mib']:.0f} MiB"
    )
    print(
        f"| warm cycle | micro-batch (s) | evaluation of {result['instances']:,} instances (s) | its CPU (s) "
        "| cycle (s) |"
    )
    print("|---|---|---|---|---|")
    timed = zip(result["cycle_batch_s"], result["cycle_eval_s"], result["cycle_eval_cpu_s"], strict=True)
    for i, (b, e, cpu_e) in enumerate(timed):
        print(f"| {i + 1} | {b:.2f} | {e:.2f} | {cpu_e:.2f} | {b + e:.2f} |")
    phases = ("addBatch", "queryPlanning", "walCommit", "commitOffsets", "latestOffset", "getBatch")
    print(f"| warm cycle | micro-batches | {' | '.join(phases)} (s) |")
    print("|---|---|" + "---|" * len(phases))
    for i, split in enumerate(result["cycle_phases_s"]):
        spent = " | ".join(f"{split.get(name, 0.0):.2f}" for name in phases)
        print(f"| {i + 1} | {int(split['batches'])} | {spent} |")
    median = statistics.median(cycles)
    print(
        f"median warm cycle {median:.2f} s; batch job's warm re-run {warm_batch_s:.1f} s "
        f"({warm_batch_s / median:.0f}x); pandas {pandas_s:.1f} s ({pandas_s / median:.0f}x)"
    )
    print("| backlog | events | micro-batches | Spark busy (s) | events/s per executor core | produce (s) |")
    print("|---|---|---|---|---|---|")
    for name, t in zip(("cold query", "warm query"), result["throughput"], strict=True):
        print(
            f"| {name} | {int(t['events']):,} | {int(t['batches'])} | {t['busy_s']:.1f} | {t['per_core_s']:,.0f} "
            f"| {t['produce_s']:.1f} |"
        )
