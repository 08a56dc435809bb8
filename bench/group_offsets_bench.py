"""Committed offsets of N groups, before and after 1a9e6ed: librdkafka's Admin ListConsumerGroupOffsets, one
OffsetFetch per group, 200 in flight (what lag's admin ingestion, the audit and check did), against
pulse/kafka/group_offsets.py's GroupOffsetsReader, one OffsetFetch v8 per coordinator for up to 200 groups.

Run: python bench/group_offsets_bench.py [--groups 200,1000] [--reads 5] [--partitions 10]
     python bench/group_offsets_bench.py --shape audit [--topics 100] [--groups 10,100] [--reads 5] [--no-in-flight]

A 3-broker dev cluster, one topic of `--partitions` partitions, the largest N groups each committing every partition
(group i, partition p at offset 10 i + p + 1). For each N: one client of each path kept across reads, one untimed
read each to connect, then `--reads` full reads of every group, old and new alternating so the host's load falls on
both alike. `--shape audit` is audit/broker.py's read instead: `--topics` topics of `--partitions` partitions, each
group committing on every one, and each group asked for every partition by name; old as the audit asked before
1a9e6ed (one group at a time), and with every group in flight. Per path: wall median / max, this process's CPU
(time.process_time: librdkafka's and kafka-python's threads too), requests a read (kafka-python's counted on its
connection; librdkafka's from its statistics, on a second client read twice after the timed reads, so no emission is
timed), and the 1-minute load average. Both paths must read the same offsets, the committed ones.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from figures import FigureLog
from large_cluster_costs import RdkafkaRequests, kafka_python_requests

from devstack.cluster import DevCluster
from devstack.populate import commit_groups, create_topics, first_commit
from devstack.runtime import DEFAULT_VERSION
from devstack.topology import DataShape, Security
from pulse.config import ClusterConfig
from pulse.kafka.group_offsets import GroupOffsetsReader
from pulse.paths import cache_dir
from pulse.profile import kafka_python_config

IN_FLIGHT = 200
"""The old path's groups in flight at once (lag/ingest/admin_source.py's batch before 1a9e6ed)."""
REQUEST_TIMEOUT_S = 60
Offsets = dict[str, dict[tuple[str, int], int]]
Named = Sequence[tuple[str, int]] | None
"""The partitions each group is asked for by name (the audit), or None: every one it committed (lag)."""


def expected_offset(group: int, partition: int) -> int:
    return 10 * group + partition + 1


def read_old(
    admin: AdminClient, groups: Sequence[str], named: Named = None, in_flight: int = IN_FLIGHT
) -> tuple[Offsets, Counter[str]]:
    """librdkafka's Admin ListConsumerGroupOffsets, one group a request, `in_flight` futures awaited a batch at a
    time, as lag/ingest/admin_source.py (200) and audit/broker.py (1, `named`) read them before 1a9e6ed."""
    found: Offsets = {}
    for i in range(0, len(groups), in_flight):
        batch = groups[i : i + in_flight]
        futures: dict[str, Future[Any]] = {}
        for g in batch:  # the audit built its TopicPartitions for every group it asked
            asked = None if named is None else [TopicPartition(t, p) for t, p in named]
            request = ConsumerGroupTopicPartitions(g, asked)
            futures[g] = admin.list_consumer_group_offsets([request], request_timeout=REQUEST_TIMEOUT_S)[g]
        for group, future in futures.items():
            answer = future.result(timeout=REQUEST_TIMEOUT_S * 2)
            found[group] = {
                (str(tp.topic), int(tp.partition)): int(tp.offset)
                for tp in answer.topic_partitions or []
                if tp.error is None and tp.offset >= 0
            }
    return found, Counter()


def rdkafka_requests(
    counted: AdminClient, stats: RdkafkaRequests, groups: Sequence[str], named: Named = None
) -> Counter[str]:
    """The requests of one warm old-path read, from librdkafka's statistics: an AdminClient's OffsetFetch is in no
    `req` counter of its (producer) handle, so it is the unlisted rest of `tx` (large_cluster_costs.py)."""
    read_old(counted, groups, named)
    _drain(counted)
    before = stats.now(counted.poll)
    read_old(counted, groups, named)
    _drain(counted)
    sent = stats.now(counted.poll) - before
    sent["OffsetFetch (unlisted)"] = sent.pop(RdkafkaRequests.UNLISTED, 0)
    return sent


def _drain(client: AdminClient) -> None:
    """Serves the emissions queued while nobody polled, so the next one counted is made after this call."""
    while client.poll(0):
        pass


def read_new(reader: GroupOffsetsReader, groups: Sequence[str], named: Named = None) -> tuple[Offsets, Counter[str]]:
    """GroupOffsetsReader's read of every group (`named` partitions, or every one it committed), requests counted."""
    with kafka_python_requests() as sent:
        read = reader.read(dict.fromkeys(groups, None if named is None else list(named)))
    bad = [f"{g}: {r.error}" for g, r in read.items() if r.code]
    assert not bad, f"{len(bad)} groups unread: {bad[:3]}"
    return {g: dict(r.offsets) for g, r in read.items()}, Counter(sent)


@dataclass
class PathRuns:
    """One path's timed reads at one N."""

    name: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    requests: Counter[str] = field(default_factory=Counter)
    loads: list[float] = field(default_factory=list)

    def timed(self, read: Callable[[], tuple[Offsets, Counter[str]]]) -> Offsets:
        w0, c0 = time.monotonic(), time.process_time()
        found, sent = read()
        self.walls.append(time.monotonic() - w0)
        self.cpus.append(time.process_time() - c0)
        self.requests = sent
        self.loads.append(os.getloadavg()[0])
        return found

    def line(self, n: int, rows: int) -> str:
        sent = ", ".join(f"{k} {v}" for k, v in sorted(self.requests.items()))
        return (
            f"  {self.name:<40} wall median {statistics.median(self.walls):.3f} s, max {max(self.walls):.3f} s "
            f"(min {min(self.walls):.3f}); CPU median {statistics.median(self.cpus):.3f} s, max {max(self.cpus):.3f} "
            f"s (min {min(self.cpus):.3f}); {1e6 * statistics.median(self.cpus) / n:.0f} µs CPU a group, "
            f"{1e6 * statistics.median(self.cpus) / (n * rows):.2f} a partition row; "
            f"requests a read: {sent}"
        )


def expected(groups: Sequence[str], partitions: Sequence[tuple[str, int]]) -> Offsets:
    """What every group committed on `partitions` (all of them the audit's, its topic's for lag)."""
    return {g: {(t, p): expected_offset(i, j) for j, (t, p) in enumerate(partitions)} for i, g in enumerate(groups)}


def commit_all(admin: AdminClient, groups: Sequence[str], partitions: Sequence[tuple[str, int]]) -> int:
    """Every group commits `expected` on every partition (the audit's shape), 10 groups in flight, a group whose
    commit a partition error refused (`__consumer_offsets` loading, a coordinator moving) asked again."""
    pending = list(enumerate(groups))
    for _ in range(10):
        failed = []
        for i in range(0, len(pending), 10):
            futures = {}
            for index, g in pending[i : i + 10]:
                tps = [TopicPartition(t, p, expected_offset(index, j)) for j, (t, p) in enumerate(partitions)]
                request = [ConsumerGroupTopicPartitions(g, tps)]
                futures[(index, g)] = admin.alter_consumer_group_offsets(request, request_timeout=120)[g]
            for key, future in futures.items():
                try:
                    done = future.result(timeout=240)
                    if any(tp.error is not None for tp in done.topic_partitions or []):
                        failed.append(key)
                except KafkaException:  # a timed-out commit: asked again
                    failed.append(key)
        if not failed:
            return len(groups) * len(partitions)
        pending = failed
        time.sleep(1)
    raise RuntimeError(f"{len(pending)} groups could not commit: {pending[:3]}")


Timed = tuple[PathRuns, Callable[[], tuple[Offsets, Counter[str]]]]


def measure(paths: Sequence[Timed], n: int, want: Mapping[str, Any], reads: int) -> None:
    """One untimed read each (connections, coordinators), then `reads` reads of each path, the order reversed every
    other round so the load falls on all alike, each read checked."""
    cold = []
    for runs, read in paths:
        w0 = time.monotonic()
        found, sent = read()
        assert found == want, f"{runs.name}: other offsets than were committed"
        cold.append(f"{runs.name.split(':')[0]} {time.monotonic() - w0:.3f} s" + (f" ({dict(sent)})" if sent else ""))
    print(f"N={n} first read, untimed: {'; '.join(cold)}")
    for r in range(reads):
        for runs, read in paths if r % 2 == 0 else paths[::-1]:
            assert runs.timed(read) == want, f"{runs.name}: other offsets than were committed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=["lag", "audit"], default="lag", help="what is read of each group")
    parser.add_argument("--groups", help="comma-separated group counts N (lag: 200,1000; audit: 10,100)")
    parser.add_argument("--topics", type=int, default=100, help="--shape audit: topics watched, all asked")
    parser.add_argument("--reads", type=int, default=5, help="timed reads of each path at each N")
    parser.add_argument("--no-in-flight", action="store_true", help="--shape audit: time old only one at a time")
    parser.add_argument("--partitions", type=int, default=10, help="partitions a topic")
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    audit = args.shape == "audit"
    counts = [int(n) for n in (args.groups or ("10,100" if audit else "200,1000")).split(",")]
    shape = DataShape(topics=args.topics if audit else 1, partitions_per_topic=args.partitions, groups=max(counts))
    topic = shape.topic_names()[0]
    all_groups = [g for g, _ in shape.group_topics()]
    partitions = [(t, p) for t in shape.topic_names() for p in range(args.partitions)]
    named = partitions if audit else None
    record = FigureLog("group_offsets_bench")
    with tempfile.TemporaryDirectory(prefix="group-offsets-bench-") as tmp:
        heap = shape.heap_mb(3)  # 1,412 MB at 10,000 partitions, as `dev up --profile large`
        jvm = {n: [f"-Xms{heap // 2}m", f"-Xmx{heap}m"] for n in (1, 2, 3)} if heap > 512 else None
        cluster = DevCluster.plan(Path(tmp) / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT, extra_jvm_flags=jvm)
        cluster.up(cache_dir(), timeout_s=300)
        admin: AdminClient | None = None
        reader: GroupOffsetsReader | None = None
        try:
            bootstrap = cluster.spec.bootstrap_servers
            setup = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            create_topics(setup, shape, 3, 120)
            first_commit(bootstrap, "bench-first", [TopicPartition(topic, 0, 1)], 120)
            t0 = time.monotonic()
            commits = (
                commit_all(setup, all_groups, partitions) if audit else commit_groups(setup, shape, expected_offset)
            )
            print(f"committed {commits:,} offsets of {len(all_groups):,} groups in {time.monotonic() - t0:.1f} s")
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            stats = RdkafkaRequests()
            counting: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 0, "stats_cb": stats}
            counted = (AdminClient({**counting, "statistics.interval.ms": 500}), stats)
            settings = kafka_python_config(
                ClusterConfig(name="local", bootstrap_servers=bootstrap.split(",")), "bench-offsets", REQUEST_TIMEOUT_S
            )
            reader = GroupOffsetsReader(settings)
            rows = len(partitions) if audit else args.partitions
            for n in counts:
                groups = all_groups[:n]
                old = PathRuns(
                    "old, 1 group at a time: librdkafka" if audit else "old: librdkafka, 1 OffsetFetch a group"
                )
                new = PathRuns("new: GroupOffsetsReader, v8 batches")
                paths: list[Timed] = [
                    (old, partial(read_old, admin, groups, named, 1 if audit else IN_FLIGHT)),
                    (new, partial(read_new, reader, groups, named)),
                ]
                if audit and not args.no_in_flight:
                    flight = PathRuns("old, all in flight: librdkafka")
                    paths.insert(1, (flight, partial(read_old, admin, groups, named, IN_FLIGHT)))
                want = expected(groups, partitions if audit else [(topic, p) for p in range(args.partitions)])
                measure(paths, n, want, args.reads)
                try:  # the statistics client can time out at 1 M rows (10,000 partitions x 100 groups)
                    old.requests = rdkafka_requests(*counted, groups, named)
                except KafkaException as exc:
                    old.requests = Counter({f"not counted ({exc.args[0].name()})": 1})
                loads = [load for runs, _ in paths for load in runs.loads]
                print(
                    f"N={n} groups x {rows:,} partitions, {args.reads} reads each, alternating; "
                    f"1-min load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores; same offsets: yes"
                )
                for runs, _ in paths:
                    print(runs.line(n, rows))
                cpu_ratio = statistics.median(new.cpus) / statistics.median(old.cpus)
                wall_ratio = statistics.median(new.walls) / statistics.median(old.walls)
                print(f"  new / old: CPU {cpu_ratio:.2f}x, wall {wall_ratio:.2f}x")
                at = f"{n}x{rows}"
                record.add(
                    "group_offsets.read_cpu", at, statistics.median(new.cpus), "s", peer=statistics.median(old.cpus)
                )
                record.add(
                    "group_offsets.read_wall", at, statistics.median(new.walls), "s", peer=statistics.median(old.walls)
                )
                record.add(
                    "group_offsets.requests",
                    at,
                    new.requests["OffsetFetch"],
                    "OffsetFetch",
                    peer=old.requests["OffsetFetch (unlisted)"],
                )
        finally:
            if reader is not None:
                reader.close()
            cluster.down()
    record.write(args.figures_out)


if __name__ == "__main__":
    main()
