"""The `groups` step of bench/large_cluster_bench.py (issue 24): real share groups and real streams groups made on
the filled cluster, spread over its topics, then the reads as the pollers make them (ShareGroupReader and
StreamsGroupReader, listed and named) and the ELR read, each timed (wall, CPU of this process) with the Kafka
requests counted on kafka-python's connection, as the `reads` step does for groups of neither type.

Share groups: librdkafka share consumers, `batch` groups at a time, each subscribed to its slice of the topics and
polled until DescribeShareGroupOffsets lists every partition of its slice, then closed (a share group stays listed
with its offsets after its members leave). Streams groups: one Kafka Streams client per group, each a stateless
topology over its slice, a sub-topology a topic so a task a partition (bench/StreamsGroupsBench.java, one JVM),
kept running while they are read."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from large_cluster_costs import kafka_python_requests, timed
from large_cluster_support import REPO, say

from devstack.runtime import DEFAULT_VERSION, ensure_streams_examples
from devstack.topology import DataShape
from pulse.paths import cache_dir

STREAMS_SOURCE = REPO / "bench" / "StreamsGroupsBench.java"


def slices(topics: Sequence[str], count: int) -> list[list[str]]:
    """`topics` cut into `count` contiguous slices of equal size (the remainder spread over the first ones)."""
    size, extra = divmod(len(topics), count)
    out, at = [], 0
    for i in range(count):
        width = size + (1 if i < extra else 0)
        out.append(list(topics[at : at + width]))
        at += width
    return out


def share_summary(read: Any) -> str:
    parts = sum(len(g.partitions) for g in read.groups)
    started = sum(1 for g in read.groups for p in g.partitions if p.start_offset is not None)
    members = sum(len(g.members) for g in read.groups)
    return f"{len(read.groups)} share groups, {parts} partitions ({started} started), {members} members {read.reason!r}"


def streams_summary(read: Any) -> str:
    members = sum(len(g.members) for g in read.groups)
    tasks = sum(m.active_tasks for g in read.groups for m in g.members)
    sources = sum(len(g.source_topics) for g in read.groups)
    states = sorted({g.state for g in read.groups})
    return (
        f"{len(read.groups)} streams groups {states}, {members} members, {tasks} active tasks, "
        f"{sources} source topics {read.reason!r}"
    )


def make_share_groups(
    bootstrap: str, reader: Any, parts: dict[str, int], names: dict[str, list[str]], batch: int, wait_s: float
) -> dict[str, Any]:
    """Each group of `names` (group -> its topics) made by a share consumer that polls until the group's offsets
    list all `parts[group]` partitions with a start offset (or `wait_s` passes), `batch` consumers at a time."""
    t0, held, started_total, short = time.monotonic(), 0, 0, []
    groups = list(names)
    earliest(bootstrap, groups)
    for at in range(0, len(groups), batch):
        chunk = groups[at : at + batch]
        consumers = []
        for group in chunk:
            consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
            consumer.subscribe(names[group])
            consumers.append(consumer)
        listed: dict[str, int] = {}
        started: dict[str, int] = {}
        try:
            deadline, next_read, last_gain = time.monotonic() + wait_s, 0.0, time.monotonic()
            while time.monotonic() < deadline:
                for consumer in consumers:
                    consumer.poll(0.05)  # drives the member's heartbeats and share fetches (implicit acks)
                if time.monotonic() >= next_read:
                    read = reader.read(chunk)
                    listed = {g.group: len(g.partitions) for g in read.groups}
                    now = {g.group: sum(p.start_offset is not None for p in g.partitions) for g in read.groups}
                    if sum(now.values()) > sum(started.values()):
                        last_gain = time.monotonic()
                    started = now
                    if all(started.get(g, 0) >= parts[g] for g in chunk):
                        break
                    if all(listed.get(g, 0) >= parts[g] for g in chunk) and time.monotonic() - last_gain > 30:
                        break  # every partition held, and no start offset gained for 30 s: taken as it is
                    next_read = time.monotonic() + 3.0
        finally:
            for consumer in consumers:
                consumer.close()
        held, started_total = held + sum(listed.values()), started_total + sum(started.values())
        short += [g for g in chunk if started.get(g, 0) < parts[g]]
        say(f"share groups made: {at + len(chunk)}/{len(groups)}, {held} partitions held, {len(short)} short")
    return {
        "groups": len(groups),
        "partitions_held": held,
        "partitions_started": started_total,
        "short": short[:10],
        "seconds": round(time.monotonic() - t0, 1),
    }


def earliest(bootstrap: str, groups: Sequence[str]) -> None:
    """`share.auto.offset.reset=earliest` for `groups` (a group config): the consumers then fetch the records the
    shape holds, which starts every share-partition (gives it a start offset) as a group that consumed would."""
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    resources = [ConfigResource(ResourceType.GROUP, g, incremental_configs=[entry]) for g in groups]
    for at in range(0, len(resources), 100):
        for future in admin.incremental_alter_configs(resources[at : at + 100]).values():
            future.result(timeout=60)


@contextmanager
def streams_groups(bootstrap: str, names: dict[str, list[str]], home: Path, wait_s: float) -> Iterator[float]:
    """The streams groups of `names` (application id -> its topics) running in one JVM while inside; yields the
    seconds until started. Stopped by its PID on the way out."""
    home.mkdir(parents=True, exist_ok=True)
    spec = home / "streams-groups.txt"
    spec.write_text("".join(f"{app} {','.join(topics)}\n" for app, topics in names.items()))
    classpath = ensure_streams_examples(DEFAULT_VERSION, cache_dir()).classpath
    argv = ["java", "-Xmx1g", "-cp", classpath, str(STREAMS_SOURCE), bootstrap, str(home / "state"), str(spec)]
    log = (home / "streams-groups.log").open("wb")
    t0 = time.monotonic()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode(errors="replace").strip()
        if not line.startswith("started"):
            raise RuntimeError(f"streams groups did not start: {line!r}, see {home / 'streams-groups.log'}")
        yield time.monotonic() - t0
    finally:
        if process.stdin is not None:
            process.stdin.close()  # the program closes its clients and exits
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def groups_step(
    bootstrap: str,
    shape: DataShape,
    share_counts: Sequence[int],
    streams_count: int,
    runs: int,
    home: Path,
    batch: int = 10,
    wait_s: float = 180.0,
) -> dict[str, Any]:
    """For each count N of `share_counts`: N new share groups over every topic (N slices), read named (those N)
    and listed (every share group so far); then `streams_count` streams groups over every topic, read listed and
    named while their clients run; then the ELR read of every topic."""
    from pulse.config import ClusterConfig
    from pulse.kafka.elr import read_elr
    from pulse.kafka.share_groups import ShareGroupReader
    from pulse.kafka.streams_groups import StreamsGroupReader
    from pulse.profile import kafka_python_config

    cluster = ClusterConfig(name="local", bootstrap_servers=bootstrap.split(","))
    settings = kafka_python_config(cluster, "bench-groups", 60)
    topics = shape.topic_names()
    per_topic = shape.partitions_per_topic
    out: dict[str, Any] = {}

    def measure(label: str, work: Callable[[], Any], describe: Callable[[Any], str]) -> None:
        results = []
        for _ in range(runs):
            waits: dict[str, list[float]] = {}
            with kafka_python_requests(waits) as sent:
                answer, wall, cpu = timed(work)
            results.append(
                {
                    "wall_s": round(wall, 3),
                    "cpu_s": round(cpu, 3),
                    "requests": dict(sorted(sent.items())),
                    "slowest_answer_s": {k: round(max(v), 3) for k, v in sorted(waits.items())},
                    "requests_total": sum(sent.values()),
                    "answer": describe(answer),
                }
            )
            say(f"{label}: {results[-1]}")
        out[label] = results

    share = ShareGroupReader(settings)
    making = ShareGroupReader(settings)  # the makers' own reads, apart from the measured reader's connections
    try:
        for n in share_counts:
            names = {f"bench-share-{n}-{i:04d}": s for i, s in enumerate(slices(topics, n))}
            parts = {g: len(t) * per_topic for g, t in names.items()}
            out[f"share_made_{n}"] = make_share_groups(bootstrap, making, parts, names, batch, wait_s)
            say(f"share groups made, {n} over {len(topics)} topics: {out[f'share_made_{n}']}")
            measure(f"share_{n}_named", partial(share.read, list(names)), share_summary)
            measure(f"share_listed_after_{n}", share.read, share_summary)
    finally:
        share.close()
        making.close()
    if streams_count > 0:
        apps = {f"bench-streams-{i:03d}": s for i, s in enumerate(slices(topics, streams_count))}
        tasks = sum(len(t) for t in apps.values()) * per_topic  # a sub-topology a topic: a task a partition
        streams = StreamsGroupReader(settings)
        try:
            with streams_groups(bootstrap, apps, home / "streams", wait_s) as started:

                def assigned() -> int:
                    read = streams.read(list(apps))
                    return sum(m.active_tasks for g in read.groups for m in g.members if g.state == "Stable")

                t0 = time.monotonic()
                while (got := assigned()) < tasks and time.monotonic() - t0 < wait_s:
                    time.sleep(3.0)  # the read above is the condition; the brokers assign at their own pace
                out["streams_made"] = {
                    "groups": len(apps),
                    "partitions": tasks,
                    "active_tasks_assigned": got,
                    "jvm_started_s": round(started, 1),
                    "assigned_s": round(time.monotonic() - t0, 1),
                }
                say(f"streams groups running: {out['streams_made']}")
                measure("streams_listed", streams.read, streams_summary)
                measure("streams_named", lambda: streams.read(list(apps)), streams_summary)
        finally:
            streams.close()
    measure("elr_all_topics", lambda: read_elr(settings, topics), lambda r: f"{len(r.by_partition)} partitions")
    return out
