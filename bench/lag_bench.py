"""Lag evaluator at scale (issue #5): commits ingested and stored per second, evaluation time and RSS for 1,000,000
synthetic group-partitions, all through the same `OffsetStore` and `Evaluator` the service uses.

Run: python bench/lag_bench.py [--groups 100000] [--partitions 10] [--topics 1000] [--intervals 10] [--mode burrow]

Workload: `--topics` topics of `--partitions` partitions each have a HWM; each of `--groups` groups consumes one
topic (group i reads topic i mod topics), so group-partitions = groups x partitions. Every group-partition receives
`--intervals` commits 60 s apart (the windows end full), each behind the HWM by a few records. Figures printed:
1. store: `OffsetStore.add_commit` calls per second (no decoding), over all commits;
2. decode+store: `__consumer_offsets` records (key v1, value v3, built here) through `decode_record` then
   `add_commit`, over `--decode-sample` records, i.e. what `KafkaLagSource.ingest` does per record;
3. RSS growth of the process from before the store was built to after it was filled, per group-partition, and the
   bytes the window arrays hold;
4. `Evaluator.evaluate_group` over every group, wall time and group-partitions per second (one process, one core).
"""

from __future__ import annotations

import argparse
import gc
import struct
import time

from lag.decoder import OffsetCommit, decode_record
from lag.evaluator import Evaluator
from lag.rules import RuleParams
from lag.status import MODES, Mode
from lag.store import OffsetStore

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


def _s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def offset_record(group: str, topic: str, partition: int, offset: int, ts_ms: int) -> tuple[bytes, bytes]:
    """An offset-commit record as Kafka 3.x writes it: key v1, value v3 (empty metadata, leader epoch -1)."""
    key = struct.pack(">h", 1) + _s16(group) + _s16(topic) + struct.pack(">i", partition)
    value = struct.pack(">hqi", 3, offset, -1) + _s16("") + struct.pack(">q", ts_ms)
    return key, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--mode", choices=MODES, default="burrow")
    parser.add_argument("--decode-sample", type=int, default=500_000)
    args = parser.parse_args()
    mode: Mode = args.mode
    groups, parts, topics, intervals = args.groups, args.partitions, args.topics, args.intervals
    group_partitions = groups * parts
    topic_names = [f"topic-{t:05d}" for t in range(topics)]
    group_names = [f"group-{g:07d}" for g in range(groups)]
    hwm = 1_000_000

    gc.collect()
    rss_before = rss_bytes()
    store = OffsetStore(intervals=intervals, min_distance_ms=1000)
    end_ms = START_MS + intervals * COMMIT_EVERY_MS
    for topic in topic_names:
        for p in range(parts):
            store.add_hwm(CLUSTER, topic, p, hwm, end_ms)

    # 1. store only: every group-partition gets `intervals` commits, one pass per interval
    add = store.add_commit
    started = time.perf_counter()
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
    store_s = time.perf_counter() - started
    commits = intervals * group_partitions
    gc.collect()
    rss_per_gp = (rss_bytes() - rss_before) / group_partitions
    array_per_gp = store.commits.nbytes() / group_partitions

    # 2. decode + store, on a separate store so the first one's windows stay as measured
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
    started = time.perf_counter()
    for key, value in records:
        record = decode_record(key, value)
        if isinstance(record, OffsetCommit):
            side.add_commit(
                CLUSTER, record.group, record.topic, record.partition, record.offset, record.commit_timestamp_ms, end_ms
            )
    decode_s = time.perf_counter() - started
    del records, side

    # 4. evaluate every group
    evaluator = Evaluator(store, RuleParams(mode=mode, intervals=intervals, offset_refresh_ms=COMMIT_EVERY_MS))
    now_ms = end_ms + 1000
    statuses: dict[str, int] = {}
    started = time.perf_counter()
    for group in group_names:
        status = evaluator.evaluate_group(CLUSTER, group, now_ms).status.name
        statuses[status] = statuses.get(status, 0) + 1
    eval_s = time.perf_counter() - started

    commits_per_s = commits / store_s
    decoded_per_s = sample / decode_s
    print(f"workload: {groups:,} groups x {parts} partitions = {group_partitions:,} group-partitions, ")
    print(f"          {topics:,} topics, intervals={intervals}, mode={mode}, {commits:,} commits")
    print(f"store:        {commits_per_s:12,.0f} commits/s  ({store_s:.1f} s)   target >= {TARGET_COMMITS_PER_S:,}")
    print(f"decode+store: {decoded_per_s:12,.0f} records/s  ({sample:,} records in {decode_s:.1f} s)")
    print(f"RSS:          {rss_per_gp:12,.0f} B per group-partition (arrays {array_per_gp:.0f} B)   target <= 300")
    print(f"evaluate:     {eval_s:12.1f} s for {group_partitions:,} group-partitions   target <= {TARGET_EVAL_S:g}")
    print(f"              {group_partitions / eval_s:12,.0f} group-partitions/s; statuses {statuses}")


if __name__ == "__main__":
    main()
