"""Fill a running dev cluster with a `DataShape`: topics created in batches, a few records a partition, and every
group's offsets committed through the Admin API (real OffsetCommit records in `__consumer_offsets`).

Cheap on purpose, for 10,000 partitions and 1,000 groups on two cores: one admin client, one producer, and no
consumer polling loops (a group without members commits with `alter_consumer_group_offsets`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.topology import DataShape, batched
from pulse.errors import ClusterError

TOPIC_BATCH = 50
"""Topics a CreateTopics request asks for: 500 partitions at 10 each, which 2 cores' controller takes in seconds."""
GROUP_BATCH = 200
"""OffsetCommit requests in flight at once (`fill` uses 50 with a long timeout: on 2 cores with 10,000 partitions a
broker, Kafka 4.3 completed about 1.6 group commits a second, as its followers' fetches of every partition lag)."""
Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def create_topics(
    admin: AdminClient, shape: DataShape, replication_factor: int, timeout_s: float, progress: Progress = _quiet
) -> None:
    """Create the shape's topics a batch at a time (ones that exist already are kept), then await every leader."""
    deadline = time.monotonic() + timeout_s
    names = shape.topic_names()
    for done, batch in enumerate(batched(names, TOPIC_BATCH)):
        new = [NewTopic(t, shape.partitions_per_topic, replication_factor) for t in batch]
        futures = admin.create_topics(new, operation_timeout=60, request_timeout=120)
        for topic, future in futures.items():
            try:
                future.result(timeout=max(1.0, deadline - time.monotonic()))
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ClusterError(f"creating topic {topic}: {exc.args[0].str()}") from exc
        progress(f"topics: {min(len(names), (done + 1) * TOPIC_BATCH)}/{len(names)}")
    await_leaders(admin, names, deadline)


def await_leaders(admin: AdminClient, topics: Sequence[str], deadline: float) -> None:
    """Poll metadata until every partition of `topics` has a leader, or ClusterError at `deadline`."""
    wanted = set(topics)
    missing = len(wanted)
    while time.monotonic() < deadline:
        try:
            metadata = admin.list_topics(timeout=60)
        except KafkaException:
            time.sleep(1)
            continue
        led = {
            name
            for name, topic in metadata.topics.items()
            if name in wanted and topic.partitions and all(p.leader >= 0 for p in topic.partitions.values())
        }
        missing = len(wanted - led)
        if not missing:
            return
        time.sleep(1)
    raise ClusterError(f"{missing} of {len(wanted)} topics still have partitions without a leader")


def produce(bootstrap: str, shape: DataShape, records_per_partition: int, timeout_s: float) -> None:
    """Write `records_per_partition` small records to every partition, so offsets and lag mean something; acks=1,
    since followers still catching up on thousands of new partitions can leave acks=all records waiting."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 100, "acks": 1, "log_level": 0})
    for topic in shape.topic_names():
        for partition in range(shape.partitions_per_topic):
            for _ in range(records_per_partition):
                while True:
                    try:
                        producer.produce(topic, value=b"shape", partition=partition)
                        break
                    except BufferError:
                        producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(timeout_s)
    if left:
        raise ClusterError(f"{left} records not acknowledged within {timeout_s:.0f} s")


def first_commit(bootstrap: str, group: str, offsets: list[TopicPartition], timeout_s: float) -> None:
    """One group's commit through a consumer, which waits while `__consumer_offsets` is created; the Admin API's
    OffsetCommit times out instead when it is the first commit of a fresh cluster (seen on Kafka 4.3)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "log_level": 0}
    )
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise ClusterError(f"first offset commit (group {group}): {exc.args[0].str()}") from exc
                time.sleep(1)
    finally:
        consumer.close()


def commit_groups(
    admin: AdminClient,
    shape: DataShape,
    offset: Callable[[int, int], int],
    timeout_s: float = 120.0,
    in_flight: int = GROUP_BATCH,
    stop: Callable[[], bool] = lambda: False,
    part: tuple[int, int] = (0, 1),
) -> int:
    """Every group commits `offset(group index, partition)` on each partition of its topic, `in_flight` requests at
    a time, until `stop()` says so between batches; returns the commits. `__consumer_offsets` must exist
    (`first_commit`). `part` (i, n) commits only the groups whose index is i modulo n."""
    commits = 0
    index_of, parts = part
    pairs = [(i, pair) for i, pair in enumerate(shape.group_topics()) if i % parts == index_of]
    for batch in batched(pairs, in_flight):
        if stop():
            break
        commits += len(batch) * shape.partitions_per_topic
        for attempt in range(COMMIT_ATTEMPTS):
            failed = _commit_batch(admin, shape, offset, timeout_s, batch)
            if not failed:
                break
            # A partition error inside a successful answer (COORDINATOR_LOAD_IN_PROGRESS while `__consumer_offsets`
            # is loading, NOT_COORDINATOR after a move) commits nothing: the group would be missing from Kafka.
            if attempt == COMMIT_ATTEMPTS - 1:
                raise ClusterError(f"committing offsets of {len(failed)} groups: {failed[0][1]}")
            batch = [item for item in batch if item[1][0] in {group for group, _ in failed}]
            time.sleep(1)
    return commits


COMMIT_ATTEMPTS = 10


def _commit_batch(
    admin: AdminClient,
    shape: DataShape,
    offset: Callable[[int, int], int],
    timeout_s: float,
    batch: Sequence[tuple[int, tuple[str, str]]],
) -> list[tuple[str, str]]:
    """One batch of groups' commits in flight at once; returns (group, error) of those a partition error refused."""
    futures: dict[str, Future[Any]] = {}
    for index, (group, topic) in batch:
        tps = [TopicPartition(topic, p, offset(index, p)) for p in range(shape.partitions_per_topic)]
        futures |= admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=timeout_s
        )
    failed: list[tuple[str, str]] = []
    for group, future in futures.items():
        try:
            result = future.result(timeout=timeout_s)
        except KafkaException as exc:  # a timed-out request: asked again with the refused ones
            failed.append((group, exc.args[0].str()))
            continue
        errors = [tp.error for tp in result.topic_partitions or [] if tp.error is not None]
        if errors:
            failed.append((group, str(errors[0])))
    return failed


def fill(
    bootstrap: str,
    shape: DataShape,
    replication_factor: int,
    records_per_partition: int = 10,
    timeout_s: float = 3600.0,
    progress: Progress = _quiet,
) -> None:
    """Create the topics, write records, and have every group commit a little behind the end (lag 0 to 4)."""
    if shape.is_empty:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    create_topics(admin, shape, replication_factor, timeout_s, progress)
    if records_per_partition:
        produce(bootstrap, shape, records_per_partition, timeout_s)
        progress(f"records: {records_per_partition} in each of {shape.partitions:,} partitions")
    if shape.groups:
        group, topic = shape.group_topics()[0]
        first_commit(bootstrap, group, [TopicPartition(topic, p, 0) for p in range(shape.partitions_per_topic)], 300)
        commits = commit_in_parallel(bootstrap, shape, lambda g, _p: max(0, records_per_partition - g % 5), 900)
        progress(f"groups: {shape.groups:,} committed {commits:,} offsets")


COMMIT_CLIENTS = 8
"""Admin clients committing at once in `fill`: one client's group commits ran at about one a second on a
10,000-partition cluster whatever its requests in flight, so the groups are split over several clients."""


def commit_in_parallel(
    bootstrap: str, shape: DataShape, offset: Callable[[int, int], int], timeout_s: float, clients: int = COMMIT_CLIENTS
) -> int:
    """`commit_groups` split over `clients` admin clients on threads of their own (group i on client i % clients)."""

    def commit(index: int) -> int:
        socket_ms = min(300_000, round(timeout_s * 1000))  # commits wait on replication; the default is 60 s
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, "socket.timeout.ms": socket_ms})
        return commit_groups(admin, shape, offset, timeout_s, 50, part=(index, clients))

    with ThreadPoolExecutor(clients, thread_name_prefix="populate-commit") as pool:
        return sum(pool.map(commit, range(clients)))
