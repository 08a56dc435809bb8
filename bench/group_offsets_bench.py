"""Committed offsets of N groups, before and after 1a9e6ed: librdkafka's Admin ListConsumerGroupOffsets, one
OffsetFetch per group, 200 in flight (what lag's admin ingestion, the audit and check did), against
pulse/kafka/group_offsets.py's GroupOffsetsReader, one OffsetFetch v8 per coordinator for up to 200 groups.

Run: python bench/group_offsets_bench.py [--groups 200,1000] [--reads 5] [--partitions 10]

A 3-broker dev cluster, one topic of `--partitions` partitions, the largest N groups each committing every partition
(group i, partition p at offset 10 i + p + 1). For each N: one client of each path kept across reads, one untimed
read each to connect, then `--reads` full reads of every group, old and new alternating so the host's load falls on
both alike. Per path: wall median / max, this process's CPU (time.process_time: librdkafka's and kafka-python's
threads too), requests a read (kafka-python's counted on its connection; librdkafka's from its statistics, on a
second client read twice after the timed reads, so no emission is timed), and the 1-minute load average. Both
paths must read the same offsets, the committed ones.
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
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
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


def expected_offset(group: int, partition: int) -> int:
    return 10 * group + partition + 1


def read_old(admin: AdminClient, groups: Sequence[str]) -> tuple[Offsets, Counter[str]]:
    """librdkafka's Admin ListConsumerGroupOffsets, one group a request, `IN_FLIGHT` futures awaited a batch at a
    time, as lag/ingest/admin_source.py read them before 1a9e6ed."""
    found: Offsets = {}
    for i in range(0, len(groups), IN_FLIGHT):
        batch = groups[i : i + IN_FLIGHT]
        futures: dict[str, Future[Any]] = {
            g: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=REQUEST_TIMEOUT_S)[
                g
            ]
            for g in batch
        }
        for group, future in futures.items():
            answer = future.result(timeout=REQUEST_TIMEOUT_S * 2)
            found[group] = {
                (str(tp.topic), int(tp.partition)): int(tp.offset)
                for tp in answer.topic_partitions or []
                if tp.error is None and tp.offset >= 0
            }
    return found, Counter()


def rdkafka_requests(counted: AdminClient, stats: RdkafkaRequests, groups: Sequence[str]) -> Counter[str]:
    """The requests of one warm old-path read, from librdkafka's statistics: an AdminClient's OffsetFetch is in no
    `req` counter of its (producer) handle, so it is the unlisted rest of `tx` (large_cluster_costs.py)."""
    read_old(counted, groups)
    _drain(counted)
    before = stats.now(counted.poll)
    read_old(counted, groups)
    _drain(counted)
    sent = stats.now(counted.poll) - before
    sent["OffsetFetch (unlisted)"] = sent.pop(RdkafkaRequests.UNLISTED, 0)
    return sent


def _drain(client: AdminClient) -> None:
    """Serves the emissions queued while nobody polled, so the next one counted is made after this call."""
    while client.poll(0):
        pass


def read_new(reader: GroupOffsetsReader, groups: Sequence[str]) -> tuple[Offsets, Counter[str]]:
    """GroupOffsetsReader's read of every group (every partition each committed), its requests counted."""
    with kafka_python_requests() as sent:
        read = reader.read(dict.fromkeys(groups))
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

    def line(self, n: int) -> str:
        sent = ", ".join(f"{k} {v}" for k, v in sorted(self.requests.items()))
        return (
            f"  {self.name:<40} wall median {statistics.median(self.walls):.3f} s, max {max(self.walls):.3f} s "
            f"(min {min(self.walls):.3f}); CPU median {statistics.median(self.cpus):.3f} s, max {max(self.cpus):.3f} "
            f"s (min {min(self.cpus):.3f}); {1e6 * statistics.median(self.cpus) / n:.0f} µs CPU a group; "
            f"requests a read: {sent}"
        )


def expected(groups: Sequence[str], topic: str, partitions: int) -> Offsets:
    return {g: {(topic, p): expected_offset(i, p) for p in range(partitions)} for i, g in enumerate(groups)}


def measure(
    admin: AdminClient,
    reader: GroupOffsetsReader,
    groups: Sequence[str],
    want: Mapping[str, Any],
    reads: int,
    counted: tuple[AdminClient, RdkafkaRequests],
) -> tuple[PathRuns, PathRuns]:
    """One untimed read each (connections, coordinators), then `reads` alternating old/new reads, each checked."""
    w0 = time.monotonic()
    assert read_old(admin, groups)[0] == want, "the old path read other offsets than were committed"
    w1 = time.monotonic()
    found, sent = read_new(reader, groups)
    assert found == want, "the new path read other offsets than were committed"
    cold = ", ".join(f"{k} {v}" for k, v in sorted(sent.items()))
    print(f"N={len(groups)} first read, untimed: old {w1 - w0:.3f} s, new {time.monotonic() - w1:.3f} s ({cold})")
    old = PathRuns("old: librdkafka, 1 OffsetFetch a group")
    new = PathRuns("new: GroupOffsetsReader, v8 batches")
    for r in range(reads):
        order = [(old, lambda: read_old(admin, groups)), (new, lambda: read_new(reader, groups))]
        for runs, read in order if r % 2 == 0 else order[::-1]:
            assert runs.timed(read) == want, f"{runs.name}: other offsets than were committed"
    old.requests = rdkafka_requests(*counted, groups)
    return old, new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="200,1000", help="comma-separated group counts N")
    parser.add_argument("--reads", type=int, default=5, help="timed reads of each path at each N")
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    counts = [int(n) for n in args.groups.split(",")]
    shape = DataShape(topics=1, partitions_per_topic=args.partitions, groups=max(counts))
    (topic,) = shape.topic_names()
    all_groups = [g for g, _ in shape.group_topics()]
    record = FigureLog("group_offsets_bench")
    with tempfile.TemporaryDirectory(prefix="group-offsets-bench-") as tmp:
        cluster = DevCluster.plan(Path(tmp) / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT)
        cluster.up(cache_dir())
        admin: AdminClient | None = None
        reader: GroupOffsetsReader | None = None
        try:
            bootstrap = cluster.spec.bootstrap_servers
            setup = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            create_topics(setup, shape, 3, 120)
            first_commit(bootstrap, "bench-first", [TopicPartition(topic, 0, 1)], 120)
            t0 = time.monotonic()
            commits = commit_groups(setup, shape, expected_offset)
            print(f"committed {commits:,} offsets of {len(all_groups):,} groups in {time.monotonic() - t0:.1f} s")
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            stats = RdkafkaRequests()
            counting: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 0, "stats_cb": stats}
            counted = (AdminClient({**counting, "statistics.interval.ms": 500}), stats)
            settings = kafka_python_config(
                ClusterConfig(name="local", bootstrap_servers=bootstrap.split(",")), "bench-offsets", REQUEST_TIMEOUT_S
            )
            reader = GroupOffsetsReader(settings)
            for n in counts:
                groups = all_groups[:n]
                old, new = measure(admin, reader, groups, expected(groups, topic, args.partitions), args.reads, counted)
                loads = old.loads + new.loads
                print(
                    f"N={n} groups x {args.partitions} partitions, {args.reads} reads each, alternating; "
                    f"1-min load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores; same offsets: yes"
                )
                print(old.line(n))
                print(new.line(n))
                cpu_ratio = statistics.median(new.cpus) / statistics.median(old.cpus)
                wall_ratio = statistics.median(new.walls) / statistics.median(old.walls)
                print(f"  new / old: CPU {cpu_ratio:.2f}x, wall {wall_ratio:.2f}x")
                at = f"{n}x{args.partitions}"
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
