"""Lag evaluator at scale: commits ingested and stored per second, evaluation time and RSS for 1,000,000
synthetic group-partitions, all through the same `OffsetStore` and `Evaluator` the service uses.

Run: python bench/lag_bench.py [--groups 100000] [--partitions 10] [--topics 1000] [--intervals 10]
                               [--modes burrow,burrow-1.2,enhanced] [--hwm-samples 1] [--check 2000] [--objects]

Workload: `--topics` topics of `--partitions` partitions each have a HWM; each of `--groups` groups consumes one
topic (group i reads topic i mod topics), so group-partitions = groups x partitions. Every group-partition receives
`--intervals` commits 60 s apart (the windows end full), each behind the HWM by a few records; a quarter of the
groups each catch up, stall, are caught up and rewind. `--hwm-samples N` gives each partition N HWM samples over the
window instead of one (the service keeps 60 by default). Figures printed:
1. store: `OffsetStore.add_commit` calls per second (no decoding), over all commits;
2. decode+store: `__consumer_offsets` records (key v1, value v3, built here) through `decode_record` then
   `add_commit`, over `--decode-sample` records, i.e. what the Kafka source does per record: first into a fresh
   store (every record opens a group-partition, as the old figure did), then into the filled store (steady state);
3. RSS growth of the process from before the group names and the store were built to after the store was filled,
   per group-partition, less the bench's own list of the names (the names themselves are counted: the store holds
   them), and the bytes the window arrays hold;
4. per mode: `Evaluator.evaluate_groups` over every group (the columnar pass: a rule, a status and a lag for every
   partition, and every group's status, totallag, maxlag and complete), wall time in this one thread; then
   `--check` random groups built as `GroupStatus` objects and compared with the scalar reference
   (`evaluate_group_reference`), which is also timed on them; `--objects` also times building the objects of every
   group (`evaluate_cluster`, what a full metrics scrape asks for).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import struct
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from figures import FigureLog

from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.ingest.records import OffsetCommit, decode_record
from lag.protocol import MODES, Status
from lag.store.offsets import OffsetStore
from tests.support.lag_reference import evaluate_group_reference

CLUSTER = "bench"
START_MS = 1_700_000_000_000
COMMIT_EVERY_MS = 60_000
TARGET_COMMITS_PER_S = 200_000
TARGET_EVAL_S = 2.0
TARGET_RSS_BYTES = 300


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


@dataclass
class Took:
    """Wall and CPU seconds of a timed block; on a shared machine CPU time is what an idle core would take."""

    wall_s: float = 0.0
    cpu_s: float = 0.0

    def rate(self, n: int) -> str:
        return f"{n / self.wall_s:12,.0f} /s wall, {n / self.cpu_s:9,.0f} /s CPU"


@contextmanager
def timed() -> Iterator[Took]:
    took = Took()
    wall, cpu = time.perf_counter(), time.process_time()
    yield took
    took.wall_s, took.cpu_s = time.perf_counter() - wall, time.process_time() - cpu


def _s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def offset_record(group: str, topic: str, partition: int, offset: int, ts_ms: int) -> tuple[bytes, bytes]:
    """An offset-commit record as Kafka 3.x writes it: key v1, value v3 (empty metadata, leader epoch -1)."""
    key = struct.pack(">h", 1) + _s16(group) + _s16(topic) + struct.pack(">i", partition)
    value = struct.pack(">hqi", 3, offset, -1) + _s16("") + struct.pack(">q", ts_ms)
    return key, value


def decode_and_store(store: OffsetStore, records: list[tuple[bytes, bytes]], now_ms: int) -> Took:
    """What the Kafka source does per record."""
    with timed() as took:
        for key, value in records:
            record = decode_record(key, value)
            if isinstance(record, OffsetCommit):
                store.add_commit(
                    CLUSTER,
                    record.group,
                    record.topic,
                    record.partition,
                    record.offset,
                    record.commit_timestamp_ms,
                    now_ms,
                )
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--hwm-samples", type=int, default=1)
    parser.add_argument("--decode-sample", type=int, default=500_000)
    parser.add_argument("--check", type=int, default=2000, help="groups compared with the scalar reference")
    parser.add_argument("--objects", action="store_true", help="also time GroupStatus objects for every group")
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    modes = args.modes.split(",")
    groups, parts, topics, intervals = args.groups, args.partitions, args.topics, args.intervals
    group_partitions = groups * parts
    topic_names = [f"topic-{t:05d}" for t in range(topics)]
    hwm = 1_000_000
    end_ms = START_MS + intervals * COMMIT_EVERY_MS
    print(f"load average before: {load()}")
    log, at = FigureLog("lag_bench"), f"{groups}x{parts}, {args.hwm_samples} HWM"

    gc.collect()
    rss_before = rss_bytes()
    group_names = [f"group-{g:07d}" for g in range(groups)]  # held by the store: counted
    store = OffsetStore(intervals=intervals, min_distance_ms=1000, hwm_capacity=args.hwm_samples)
    samples = args.hwm_samples
    for topic in topic_names:
        for p in range(parts):
            for s in range(samples):  # the last sample is `hwm` at the end of the window
                store.add_hwm(CLUSTER, topic, p, hwm - 20 * (samples - 1 - s), end_ms - (samples - 1 - s) * 10_000)

    # 1. store only: every group-partition gets `intervals` commits, one pass per interval
    add = store.add_commit
    with timed() as store_took:
        for i in range(intervals):
            ts = START_MS + i * COMMIT_EVERY_MS
            behaviours = (
                hwm - 100 + 10 * i,  # catching up: OK
                hwm - 100,  # the same offset with lag: STALL
                hwm,  # caught up: OK by the first rule
                hwm - 100 + 10 * i - (50 if i == intervals - 1 else 0),  # went back at the end: REWIND
            )
            for g, group in enumerate(group_names):
                topic = topic_names[g % topics]
                offset = behaviours[g % 4]
                for p in range(parts):
                    add(CLUSTER, group, topic, p, offset, ts, end_ms)
    commits = intervals * group_partitions
    gc.collect()
    rss_per_gp = (rss_bytes() - rss_before - sys.getsizeof(group_names)) / group_partitions
    array_per_gp = store.commits.nbytes() / group_partitions

    # 2. decode + store, first on a separate store so the first one's windows stay as measured
    sample = min(args.decode_sample, group_partitions)
    records = [
        offset_record(group_names[g], topic_names[g % topics], p, hwm - 5, end_ms)
        for g in range(-(-sample // parts))
        for p in range(parts)
    ][:sample]
    side = OffsetStore(intervals=intervals)
    for topic in topic_names:
        for p in range(parts):
            side.add_hwm(CLUSTER, topic, p, hwm, end_ms)
    decoded_new = decode_and_store(side, records, end_ms)
    del side

    print(f"workload: {groups:,} groups x {parts} partitions = {group_partitions:,} group-partitions,")
    print(
        f"          {topics:,} topics, intervals={intervals}, {samples} HWM sample(s) a partition, {commits:,} commits"
    )
    print(f"store:        {store_took.rate(commits)} commits   target >= {TARGET_COMMITS_PER_S:,}")
    print(f"decode+store: {decoded_new.rate(sample)} records   ({sample:,}, each a new group-partition)")
    print(
        f"RSS:          {rss_per_gp:12,.0f} B per group-partition (window arrays {array_per_gp:.0f} B)   target <= 300"
    )
    log.add("lag.commits_stored_per_cpu_s", at, commits / store_took.cpu_s, "/s", better="higher")
    log.add("lag.decoded_new_per_cpu_s", at, sample / decoded_new.cpu_s, "/s", better="higher")
    log.add("lag.rss_per_group_partition", at, rss_per_gp, "B")

    # 4. evaluate every group, per mode
    gids = store.sorted_groups(CLUSTER)[1].tolist()
    rng = random.Random(5)
    checked = rng.sample(range(len(gids)), min(args.check, len(gids)))
    now_ms = end_ms + 1000
    for mode in modes:
        params = RuleParams(
            mode=mode, intervals=intervals, allowed_lag=0, minimum_complete=0.0, offset_refresh_ms=COMMIT_EVERY_MS
        )
        evaluator = Evaluator(store, params)
        with timed() as eval_took:
            verdicts = evaluator.evaluate_groups(CLUSTER, gids, now_ms)
        names, counts = np.unique(verdicts.group_status, return_counts=True)
        statuses = {Status(int(n)).name: int(c) for n, c in zip(names, counts, strict=True)}
        names, counts = np.unique(verdicts.status, return_counts=True)
        partitions = {Status(int(n)).name: int(c) for n, c in zip(names, counts, strict=True)}
        with timed() as objects_took:
            objects = [evaluator.group_status(verdicts, g) for g in checked]
        with timed() as reference_took:
            reference = [evaluate_group_reference(evaluator, CLUSTER, o.group, now_ms) for o in objects]
        if objects != reference:
            raise SystemExit(f"{mode}: the columnar verdicts differ from the scalar reference")
        checked_gp = sum(o.partition_count for o in objects) or 1
        print(f"evaluate {mode}:")
        log.add("lag.evaluate_cpu", f"{at}, {mode}", eval_took.cpu_s, "s")
        print(
            f"  columnar:   {eval_took.wall_s:12.2f} s wall, {eval_took.cpu_s:.2f} s CPU for {len(verdicts.status):,} "
            "group-partitions, one thread   target <= 2"
        )
        print(f"              groups {statuses}")
        print(f"              partitions {partitions}")
        per_gp = 1e6 / checked_gp
        print(
            f"  objects:    {objects_took.wall_s * per_gp:12.2f} us wall, {objects_took.cpu_s * per_gp:.2f} us CPU "
            "per group-partition to build GroupStatus objects"
        )
        print(
            f"  reference:  {reference_took.wall_s * per_gp:12.2f} us wall, {reference_took.cpu_s * per_gp:.2f} us CPU "
            f"per group-partition, scalar rules; {len(objects):,} sampled groups: identical"
        )
        if args.objects:
            with timed() as every_took:
                every = sum(1 for _ in evaluator.evaluate_cluster(CLUSTER, now_ms))
            print(
                f"  all objects: {every_took.wall_s:11.1f} s wall, {every_took.cpu_s:.1f} s CPU for {every:,} groups "
                "(evaluate_cluster: the columnar pass, then every GroupStatus)"
            )

    # 2b. decode + store into the filled store: every record lands in an existing window (steady state)
    later = end_ms + 60_000
    steady = [
        offset_record(group_names[g % groups], topic_names[g % topics], p, hwm - 5, later + 60_000 * (g // groups))
        for g in range(-(-sample // parts))
        for p in range(parts)
    ][:sample]
    decoded_steady = decode_and_store(store, steady, later)
    print(f"decode+store: {decoded_steady.rate(sample)} records   ({sample:,} into existing group-partitions)")
    print(f"load average after: {load()}")
    log.write(args.figures_out)


if __name__ == "__main__":
    main()
