"""A large cluster's lag evaluator in one process, simulated: synthetic `__consumer_offsets` records through the real
ingestion path (`OffsetsTopicReader.ingest`: decode a poll, then store it 1,000 records per hold of the lock) and HWMs
into the same store, for 200,000 partitions consumed by 10 groups each (2,000,000 group-partitions) by default.

Run: python bench/lag_fleet_bench.py [--topics 2000] [--partitions 100] [--groups-per-topic 10] [--rounds 3]
                                     [--intervals 10] [--batch 10000] [--scrape-interval 30] [--partition-scrape]

Each group reads one topic; every round commits once to each of its partitions (60 s apart), a few records behind
a HWM that grows by 100 a round. Figures printed: RSS of the process after the fill (and per group-partition);
CPU per record ingested in the last round (the store already holds every group-partition: steady state), so the
CPU that 200,000 commits/s take; `Evaluator.evaluate_groups` over every group; a `metrics_granularity: group`
scrape (and a partition one with `--partition-scrape`: about 1 GB of text at the default size); and the ingestion
rate past which one process cannot keep up, on one core (the interpreter lock), while it is scraped every
`--scrape-interval` seconds: (1 - scrape CPU / interval) / CPU per record.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator
from pathlib import Path

from figures import FigureLog
from lag_bench import START_MS, Took, load, offset_record, rss_bytes, timed
from prometheus_client import generate_latest

from lag.ingest.offsets_topic import OffsetsTopicReader
from lag.serve.metrics import LagCollector
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig

CLUSTER = "fleet"
TARGET_COMMITS_PER_S = 200_000


def batches(args: argparse.Namespace, round_: int, ts_ms: int) -> Iterator[list[tuple[bytes | None, bytes | None]]]:
    """One round of commits, a poll's worth at a time."""
    batch: list[tuple[bytes | None, bytes | None]] = []
    hwm = 1_000_000 + 100 * round_
    for t in range(args.topics):
        topic = f"fleet-topic-{t:05d}"
        for g in range(args.groups_per_topic):
            group = f"fleet-group-{t:05d}-{g:02d}"
            for p in range(args.partitions):
                batch.append(offset_record(group, topic, p, hwm - (g * 7 + p) % 50, ts_ms))
                if len(batch) == args.batch:
                    yield batch
                    batch = []
    if batch:
        yield batch


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--groups-per-topic", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--scrape-interval", type=float, default=30.0)
    parser.add_argument("--partition-scrape", action="store_true")
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    gp = args.topics * args.partitions * args.groups_per_topic
    now = [START_MS]
    config = LagConfig(mode="burrow", intervals=args.intervals, min_distance_s=1)
    service = LagService(config, clock_ms=lambda: now[0])
    source = OffsetsTopicReader(CLUSTER, {}, service, SourceHealth(60, 0, lambda: now[0]))
    print(f"load average before: {load()}")
    gc.collect()
    rss_before = rss_bytes()
    ingest = Took()
    for r in range(args.rounds):
        now[0] = START_MS + r * 60_000
        with service.locked() as store:  # a HWM round
            for t in range(args.topics):
                for p in range(args.partitions):
                    store.add_hwm(CLUSTER, f"fleet-topic-{t:05d}", p, 1_000_000 + 100 * r, now[0])
        records = 0
        ingest = Took()
        for batch in batches(args, r, now[0]):
            with timed() as took:
                source.ingest(batch)
            ingest.wall_s += took.wall_s
            ingest.cpu_s += took.cpu_s
            records += len(batch)
        print(f"round {r + 1}: {records:,} records in {ingest.cpu_s:.1f} s CPU ({records / ingest.cpu_s:,.0f} /s CPU, "
              f"load {load()})")  # fmt: skip
    gc.collect()
    rss = rss_bytes() - rss_before
    per_record_s = ingest.cpu_s / gp
    groups = args.topics * args.groups_per_topic
    print(f"workload: {args.topics:,} topics x {args.partitions} partitions x {args.groups_per_topic} groups = "
          f"{gp:,} group-partitions ({groups:,} groups), intervals={args.intervals}, {args.rounds} rounds")  # fmt: skip
    print(f"RSS growth: {rss / 2**20:,.0f} MiB, {rss / gp:,.0f} B per group-partition")
    print(f"ingestion (last round, existing group-partitions): {per_record_s * 1e6:.2f} us CPU per record; "
          f"{TARGET_COMMITS_PER_S:,} commits/s take {per_record_s * TARGET_COMMITS_PER_S:.2f} cores")  # fmt: skip
    now[0] += 1000
    ids = service.store.sorted_groups(CLUSTER)[1].tolist()
    with timed() as evaluation:
        service.evaluator.evaluate_groups(CLUSTER, ids, now[0])
    print(f"evaluation of every group: {evaluation.cpu_s:.2f} s CPU, {evaluation.wall_s:.2f} s wall (load {load()})")
    scrape_cpu = 0.0
    for granularity in ("group", "partition") if args.partition_scrape else ("group",):
        with timed() as took:
            text = b"".join(LagCollector(service, granularity).render(generate_latest))
        scrape_cpu = took.cpu_s if granularity == "group" else scrape_cpu
        print(f"scrape, metrics_granularity {granularity}: {took.cpu_s:.2f} s CPU, {took.wall_s:.2f} s wall, "
              f"{len(text):,} B (load {load()})")  # fmt: skip
        del text
    spare = 1 - scrape_cpu / args.scrape_interval
    print(f"one process keeps up to about {spare / per_record_s:,.0f} commits/s on one core with a group scrape "
          f"every {args.scrape_interval:g} s")  # fmt: skip
    print(f"load average after: {load()}")
    record, at = FigureLog("lag_fleet_bench"), f"{args.topics}x{args.partitions}x{args.groups_per_topic}"
    record.add("lag_fleet.cpu_per_record", at, per_record_s * 1e6, "µs")
    record.add("lag_fleet.keeps_up_to", at, spare / per_record_s, "commits/s", better="higher")
    record.write(args.figures_out)


if __name__ == "__main__":
    main()
