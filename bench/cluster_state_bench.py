"""The Python side of `collect`'s cluster-state cycle at large partition counts, without a cluster.

Run: PYTHONPATH=. python bench/cluster_state_bench.py [--runs 5] [--sizes 10000,100000,200000]

Builds librdkafka-shaped metadata (`TopicMetadata.partitions` keyed by id, `PartitionMetadata` with `replicas` and
`isrs` lists) for clusters of 10 partitions per topic, replication 3, over 3 brokers per 1,000 partitions (at
most 100), a few partitions under-replicated, and measures the CPU of what `fetch_snapshot` and the scraper do
with it after the Admin calls: `partition_states` (metadata -> PartitionState) and `assess` (-> ClusterHealth),
beside the code they replaced (the per-partition keyword build and `assess_reference`, the test oracle). The Admin
calls themselves (librdkafka building the metadata, describe_configs per topic) are not in these figures: they
need a real cluster (bench/large_cluster_bench.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from collectors.cluster_state import ClusterSnapshot, assess, partition_states
from pulse.kafka.partitions import PartitionState
from tests.unit.collectors.cluster_state_reference import assess_reference


def metadata(partitions: int, brokers: int) -> dict[str, Any]:
    """Topics of 10 partitions in librdkafka's shape; every 500th partition has lost its last replica."""
    topics: dict[str, Any] = {}
    for i in range(partitions):
        replicas = [(i + k) % brokers + 1 for k in range(3)]
        isrs = replicas[:-1] if i % 500 == 0 else list(replicas)
        topic = topics.setdefault(f"topic-{i // 10:05d}", SimpleNamespace(partitions={}))
        topic.partitions[i % 10] = SimpleNamespace(id=i % 10, leader=replicas[0], replicas=replicas, isrs=isrs)
    return topics


def build_before(topics: Mapping[str, Any], min_isr: Mapping[str, int]) -> tuple[PartitionState, ...]:
    """The build `partition_states` replaced: keywords, a key function and a min ISR lookup per partition."""
    return tuple(
        PartitionState(
            topic=name,
            partition=p.id,
            leader=p.leader,
            replicas=tuple(p.replicas),
            isr=tuple(p.isrs),
            min_isr=min_isr.get(name, 1),
        )
        for name, topic in sorted(topics.items())
        for p in sorted(topic.partitions.values(), key=lambda part: part.id)
    )


def cpu_ms(work: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.process_time()
        work()
        samples.append((time.process_time() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="measured runs per figure (median reported)")
    parser.add_argument("--sizes", default="10000,100000,200000", help="partition counts, comma-separated")
    args = parser.parse_args()
    print(
        "| partitions | brokers | build before (ms) | build now (ms) | assess before (ms) | assess now (ms) "
        "| total before / now |"
    )
    print("|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        brokers = min(100, max(3, 3 * size // 1000))
        topics = metadata(size, brokers)
        min_isr = {name: 2 for name in topics}
        racks = {b: f"az-{b % 3}" for b in range(1, brokers + 1)}
        snapshot = ClusterSnapshot(racks, 1, partition_states(topics, min_isr))
        assert assess(snapshot) == assess_reference(snapshot)
        assert build_before(topics, min_isr) == snapshot.partitions
        build_old = cpu_ms(lambda: build_before(topics, min_isr), args.runs)  # noqa: B023 (used at once)
        build_new = cpu_ms(lambda: partition_states(topics, min_isr), args.runs)  # noqa: B023
        assess_old = cpu_ms(lambda: assess_reference(snapshot), args.runs)  # noqa: B023
        assess_new = cpu_ms(lambda: assess(snapshot), args.runs)  # noqa: B023
        ratio = (build_old + assess_old) / (build_new + assess_new)
        print(
            f"| {size:,} | {brokers} | {build_old:.0f} | {build_new:.0f} | {assess_old:.0f} | {assess_new:.0f} "
            f"| {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
