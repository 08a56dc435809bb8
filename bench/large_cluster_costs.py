"""Cost steps of bench/large_cluster_bench.py (issues 24 and 26): on the filled cluster, one broker-side audit
cycle (audit/broker.py) with N watched groups, the share- and streams-group reads and the ELR read
(DescribeTopicPartitions), each timed (wall, CPU of this process) with the Kafka requests it sent counted at the
client: librdkafka's own per-broker request counters (its statistics' `req`) for the audit's confluent-kafka
clients, a counter on kafka-python's connection for the others. Also the reconciliation stream's throughput
(audit/reconcile_stream.py, local Spark) on a synthetic backlog of count rows, which needs no cluster."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from large_cluster_support import cpu_seconds, descendants, say

from audit.broker import BrokerAudit
from audit.minutes import MinuteAudit
from devstack.topology import DataShape
from pulse.config import ClusterConfig
from pulse.kafka.group_offsets import GroupOffsetsReader
from pulse.profile import kafka_python_config

STATS_MS = 500
"""librdkafka's statistics interval in the audit step: its request counters are read from them."""


class RdkafkaRequests:
    """A `stats_cb`: the requests one librdkafka client sent, by type, summed over its brokers (cumulative)."""

    UNLISTED = "unlisted"
    """Requests sent (`tx`) but in no `req` counter: librdkafka lists only the types of its client's kind, and
    an AdminClient is a producer handle, so its OffsetFetch (the groups' committed offsets) lands here."""

    def __init__(self) -> None:
        self.latest: Counter[str] = Counter()
        self.emitted = 0

    def __call__(self, stats: str) -> None:
        total: Counter[str] = Counter()
        sent = 0
        for broker in json.loads(stats).get("brokers", {}).values():
            total.update({kind: n for kind, n in (broker.get("req") or {}).items() if n})
            sent += int(broker.get("tx") or 0)
        total[self.UNLISTED] = sent - sum(total.values())
        self.latest, self.emitted = total, self.emitted + 1

    def now(self, serve: Callable[[float], object], wait_s: float = 10.0) -> Counter[str]:
        """The counters of an emission made after this call (callbacks served by `serve`, a client's poll)."""
        target, deadline = self.emitted + 2, time.monotonic() + wait_s
        while self.emitted < target and time.monotonic() < deadline:
            serve(0.1)
        return Counter(self.latest)


@contextmanager
def kafka_python_requests(waits: dict[str, list[float]] | None = None) -> Iterator[Counter[str]]:
    """Every request kafka-python writes to a broker while inside, by message name (the class is patched here);
    with `waits`, each one's seconds from sent to answered are added to it by name too."""
    from kafka.net.connection import KafkaConnection

    sent: Counter[str] = Counter()
    original = KafkaConnection._send_request

    def counting(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        name = type(request).__name__.removesuffix("Request").split("_v")[0] or repr(request)[:40]
        sent[name] += 1
        t0 = time.monotonic()
        future = original(self, request, *args, **kwargs)
        if waits is not None and future is not None:
            future.add_both(lambda _: waits.setdefault(name, []).append(time.monotonic() - t0))
        return future

    KafkaConnection._send_request = counting
    try:
        yield sent
    finally:
        KafkaConnection._send_request = original


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    """`work()`, its wall and this process's CPU (every thread: librdkafka's and kafka-python's too)."""
    w0, c0 = time.monotonic(), time.process_time()
    result = work()
    return result, time.monotonic() - w0, time.process_time() - c0


def offsets_reader(bootstrap: str) -> GroupOffsetsReader:
    """The audit's committed-offsets reader, as audit/service.py builds it (a 120 s request timeout at this size)."""
    cluster = ClusterConfig(name="local", bootstrap_servers=bootstrap.split(","))
    return GroupOffsetsReader(kafka_python_config(cluster, "bench-audit", 120))


def now_cycle(audit: BrokerAudit) -> list[MinuteAudit]:
    return audit.cycle(int(time.time() * 1000))


def audit_step(bootstrap: str, shape: DataShape, group_counts: Sequence[int], cycles: int) -> dict[str, Any]:
    """For each N: a BrokerAudit of every topic against N of the shape's groups. One cycle with librdkafka's
    statistics on, for its requests by type (at 10,000 partitions each emission is a JSON of every partition, which
    costs CPU and memory of its own: that cycle's timing is not the audit's), then `cycles` cycles back to back on
    new clients without statistics, timed (a cycle reads a boundary when a minute became due since the last)."""
    out: dict[str, Any] = {}
    topics = shape.topic_names()
    for n in group_counts:
        groups = [g for g, _ in shape.group_topics()[:n]]
        consumer_reqs, admin_reqs = RdkafkaRequests(), RdkafkaRequests()
        common: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 0}
        stats = {**common, "statistics.interval.ms": STATS_MS}
        consumer = Consumer({**stats, "group.id": "bench-audit", "stats_cb": consumer_reqs})
        admin = AdminClient({**stats, "stats_cb": admin_reqs})  # type: ignore[dict-item]  # a callback is a setting
        audit = BrokerAudit("local", consumer, admin, offsets_reader(bootstrap), topics, groups, None, timeout_s=120)
        try:
            c0, a0 = consumer_reqs.now(consumer.poll), admin_reqs.now(admin.poll)
            with kafka_python_requests() as offsets_sent:
                _, wall, cpu = timed(partial(now_cycle, audit))
            requests = (consumer_reqs.now(consumer.poll) - c0) + (admin_reqs.now(admin.poll) - a0) + offsets_sent
        finally:
            audit.close()
        counted = {
            "requests": dict(sorted(requests.items())),
            "requests_total": sum(requests.values()),
            "groups_asked": len(groups),
            "wall_s_with_statistics": round(wall, 2),
            "cpu_s_with_statistics": round(cpu, 2),
        }
        say(f"audit cycle counted, {len(topics)} topics x {n} groups: {counted}")
        consumer = Consumer({**common, "group.id": "bench-audit"})
        audit = BrokerAudit(
            "local", consumer, AdminClient(common), offsets_reader(bootstrap), topics, groups, None, timeout_s=120
        )
        runs = []
        try:
            for _ in range(cycles):
                before = audit.book.read_up_to(topics[0])
                with kafka_python_requests() as offsets_sent:
                    settled, wall, cpu = timed(partial(now_cycle, audit))
                runs.append(
                    {
                        "wall_s": round(wall, 2),
                        "cpu_s": round(cpu, 2),
                        "boundary_read": audit.book.read_up_to(topics[0]) != before,
                        "settled": len(settled),
                        "offset_fetches": offsets_sent["OffsetFetch"],
                    }
                )
                say(f"audit cycle timed, {len(topics)} topics x {n} groups: {runs[-1]}")
        finally:
            audit.close()
        out[f"{n}_groups"] = {"counted": counted, "timed": runs}
    return out


def group_reads_step(bootstrap: str, shape: DataShape, runs: int) -> dict[str, Any]:
    """The share-group and streams-group reads as the collectors make them (every group listed, those of the type
    described), the same asked for every group of the shape by name (the describe's fan-out over the
    coordinators), and the ELR read of every topic (DescribeTopicPartitions, as when all are under min ISR)."""
    from pulse.kafka.elr import read_elr
    from pulse.kafka.share_groups import ShareGroupReader
    from pulse.kafka.streams_groups import StreamsGroupReader

    cluster = ClusterConfig(name="local", bootstrap_servers=bootstrap.split(","))
    settings = kafka_python_config(cluster, "bench-reads", 60)
    named = [g for g, _ in shape.group_topics()]
    out: dict[str, Any] = {}

    def measure(label: str, work: Callable[[], Any], describe: Callable[[Any], str]) -> None:
        results = []
        for _ in range(runs):
            with kafka_python_requests() as sent:
                answer, wall, cpu = timed(work)
            results.append(
                {
                    "wall_s": round(wall, 3),
                    "cpu_s": round(cpu, 3),
                    "requests": dict(sorted(sent.items())),
                    "requests_total": sum(sent.values()),
                    "answer": describe(answer),
                }
            )
            say(f"{label}: {results[-1]}")
        out[label] = results

    share, streams = ShareGroupReader(settings), StreamsGroupReader(settings)
    try:
        # The first read of each reader connects; both are kept across reads as the pollers keep them.
        measure("share_listed", share.read, lambda r: f"{len(r.groups)} share groups {r.reason!r}")
        measure("share_named", lambda: share.read(named), lambda r: f"{len(r.groups)} groups {r.reason!r}")
        measure("streams_listed", streams.read, lambda r: f"{len(r.groups)} streams groups {r.reason!r}")
        measure("streams_named", lambda: streams.read(named), lambda r: f"{len(r.groups)} groups {r.reason!r}")
    finally:
        share.close()
        streams.close()
    topics = shape.topic_names()
    measure("elr_all_topics", lambda: read_elr(settings, topics), lambda r: f"{len(r.by_partition)} partitions")
    return out


def stream_step(rows: int, topics: int, groups: int, masters: Sequence[str], home: Path) -> dict[str, Any]:
    """The reconciliation stream over a backlog of `rows` count rows in Parquet (per topic and minute: the
    producers' row, and each group's broker and consumer rows), read at once (availableNow): count rows per second
    and per executor core, CPU of the Spark JVM and this process."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from audit.reconcile import COUNT_COLUMNS
    from audit.reconcile_stream import ReconcileStream
    from slo import spark_session

    schema = pa.schema(
        [
            pa.field("__id", pa.string()),
            pa.field("cluster", pa.string()),
            pa.field("topic", pa.string()),
            pa.field("minute", pa.timestamp("us", tz="UTC")),
            pa.field("grp", pa.string()),
            *(pa.field(c, pa.bool_() if c == "complete" else pa.int64()) for c in COUNT_COLUMNS),
        ]
    )
    source = home / "count-rows"
    source.mkdir(parents=True, exist_ok=True)
    per_minute = topics * (1 + 2 * groups)
    minutes = max(3, rows // per_minute)
    start = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    made = 0
    for m in range(minutes):
        table = minute_rows(schema, m, datetime.fromtimestamp(start + 60 * m, UTC), topics, groups)
        pq.write_table(table, source / f"minute-{m:05d}.parquet")
        made += table.num_rows
    say(f"stream backlog: {made} count rows, {minutes} minutes x {topics} topics x {groups} groups")
    out: dict[str, Any] = {"rows": made, "minutes": minutes, "topics": topics, "groups": groups}
    for master in masters:
        spark = spark_session(master, app_name="bench-reconcile-stream")
        jvm = [p for p in descendants(os.getpid()) if "java" in Path(f"/proc/{p}/cmdline").read_text()]
        runs = []
        for run in range(2):  # the first run includes the JVM's warm-up
            stream = ReconcileStream(120, home / f"checkpoint-{master}-{run}")
            reader = spark.readStream.schema(from_arrow_schema(schema))
            j0, c0, w0 = sum(cpu_seconds(p) for p in jvm), time.process_time(), time.monotonic()
            query = stream.start(reader.parquet(str(source)), available_now=True)
            query.awaitTermination()
            wall = time.monotonic() - w0
            cpu = sum(cpu_seconds(p) for p in jvm) - j0 + time.process_time() - c0
            judged = stream.judged()
            cores = int(master.removeprefix("local[").removesuffix("]"))
            runs.append(
                {
                    "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2),
                    "rows_per_s": round(made / wall),
                    "rows_per_s_per_core": round(made / wall / cores),
                    "rows_per_cpu_s": round(made / max(cpu, 1e-9)),
                    "minutes_judged": judged.minutes,
                    "findings": sum(judged.findings.values()),
                }
            )
            say(f"reconcile stream on {master}, run {run}: {runs[-1]}")
        out[master] = runs
        spark.stop()
    return out


def minute_rows(schema: pa.Schema, m: int, minute: datetime, topics: int, groups: int) -> pa.Table:
    """One minute of count rows: per topic the producers' row, per group its broker row (a third of the minutes
    short of what was written) and its consumers' row."""
    from audit.reconcile import COUNT_COLUMNS

    batch: dict[str, list[Any]] = {f.name: [] for f in schema}

    def add(topic: str, grp: str, counts: dict[str, Any]) -> None:
        batch["__id"].append(f"{m}:{len(batch['__id'])}")
        batch["cluster"].append("prod")
        batch["topic"].append(topic)
        batch["minute"].append(minute)
        batch["grp"].append(grp)
        for c in COUNT_COLUMNS:
            batch[c].append(counts.get(c))

    for t in range(topics):
        topic, short = f"topic-{t:04d}", (t + m) % 3
        add(topic, "", {"sent": 1000, "acknowledged": 1000, "failed": 0})
        for g in range(groups):
            add(topic, f"group-{g}", {"written": 1000, "passed": 1000 - short, "complete": short == 0})
            add(topic, f"group-{g}", {"received": 1000, "processed": 1000})
    return pa.table(batch, schema=schema)
