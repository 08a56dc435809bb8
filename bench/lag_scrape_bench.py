"""Lag /metrics and Burrow status at scale: CPU of one full scrape of the lag families (written from the evaluator's
arrays, and the object path they replaced, side by side), and the latency of per-group status requests while
commits are being ingested, on synthetic group-partitions stored through the service's `OffsetStore`.

Run: python bench/lag_scrape_bench.py [--groups 100000] [--partitions 10] [--topics 1000] [--intervals 10]
                                      [--hwm-samples 1] [--mode burrow] [--scrapes 3] [--no-objects]
                                      [--shuffled-names]
                                      [--statuses 2000] [--statuses-only] [--batches 10000]
                                      [--ingest-rate 0] [--switch-interval-s S|none] [--slow-broker]

Workload: as bench/lag_bench.py (group i reads topic i mod topics; every group-partition gets `--intervals`
commits 60 s apart; a quarter of the groups each catch up, stall, are caught up and rewind). Figures printed:
1. scrape, per `metrics_granularity` (partition, group): CPU and wall seconds of `LagCollector.render` in the
   text format (`scrape_rows` under the lock, then the text, made piece by piece as `pulse.http` streams it), the
   best of `--scrapes`; the split between the two; how much the process grew meanwhile; bytes and sample lines;
   and the gzip that `pulse.http` adds when the scraper accepts it (`GZIP_LEVEL`), beside client_python's level 9;
   before them, the process's RSS growth per group-partition from before the fill, right after it and once
   `--steady-scrapes` renders at `--steady-granularity` have been sent piece by piece and dropped, as the listener
   sends them: what a running service holds between two scrapes (names included);
2. the object path (`LagService.all_statuses` into client_python families, tests/support/lag_metrics_oracle.py),
   once, and whether its text is byte-identical;
3. status: `--statuses` requests for random groups through the Burrow route table (`GET .../consumer/{group}/status`,
   JSON included), each timed: idle, then while a thread hands `__consumer_offsets` records to
   `OffsetsTopicReader.ingest` in polls of `--batches` records (`--ingest-rate` records/s, 0 = as fast as it can);
   p50/p99/max and the ingestion rate reached. The interpreter's switch interval is `lag.switch_interval_s`
   (`--switch-interval-s`, validated by `LagConfig`; `none` keeps Python's 5 ms), applied as `LagRunner` applies it;
4. with `--slow-broker`: the page-cache hint on (every broker an hour's window, so nobody reads beyond it) and broker
   2 flagged slow, a whole scrape of the lag registry through pulse.http's `encode` (every lag family: the noisy
   neighbours' need the diagnosis) at each granularity, best of `--scrapes`, and how many times it evaluated every
   group (at group granularity the evaluation is most of a scrape, so a second one shows).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from figures import FigureLog
from lag_bench import COMMIT_EVERY_MS, START_MS, Took, load, offset_record, rss_bytes, timed
from prometheus_client import CollectorRegistry, generate_latest

from lag.assembly import SwitchInterval
from lag.ingest.offsets_topic import INGEST_CHUNK, OffsetsTopicReader
from lag.protocol import ClusterRows, PageCacheEstimate
from lag.serve.metrics import LagCollector
from lag.serve.routes import BurrowApi
from lag.service import LagService
from lag.store.freshness import SourceHealth
from lag.store.offsets import OffsetStore
from pulse.broker_health import BrokerHealthBoard, BrokerSlowness
from pulse.config import LagConfig
from pulse.http import Request
from pulse.http.exposition import GZIP_LEVEL, encode, encode_families

CLUSTER = "bench"
TARGET_SCRAPE_CPU_S = {"partition": 1.0, "group": 0.3}
TARGET_STATUS_P99_MS = 10.0


def fill(
    service: LagService, groups: int, parts: int, topics: int, intervals: int, samples: int, shuffled: bool = False
) -> int:
    """The workload of bench/lag_bench.py; returns the end of the windows (ms). `shuffled` names the groups in an
    order unrelated to their arrival, as a real cluster's first commits come, so the scrape's name order is work."""
    store = service.store
    numbers = list(range(groups))
    if shuffled:
        random.Random(15).shuffle(numbers)
    hwm = 1_000_000
    end_ms = START_MS + intervals * COMMIT_EVERY_MS
    topic_names = [f"topic-{t:05d}" for t in range(topics)]
    for topic in topic_names:
        for p in range(parts):
            for s in range(samples):
                store.add_hwm(CLUSTER, topic, p, hwm - 20 * (samples - 1 - s), end_ms - (samples - 1 - s) * 10_000)
    add = store.add_commit
    for i in range(intervals):
        ts = START_MS + i * COMMIT_EVERY_MS
        behaviours = (hwm - 100 + 10 * i, hwm - 100, hwm, hwm - 100 + 10 * i - (50 if i == intervals - 1 else 0))
        for g in range(groups):
            group, topic, offset = f"group-{numbers[g]:07d}", topic_names[g % topics], behaviours[g % 4]
            for p in range(parts):
                add(CLUSTER, group, topic, p, offset, ts, end_ms)
    return end_ms


class CountedService(LagService):
    """The service, counting its full evaluations for /metrics (`--slow-broker`)."""

    scrapes = 0

    def scrape_rows(self, now_ms: int) -> list[ClusterRows]:
        self.scrapes += 1
        return super().scrape_rows(now_ms)


def slow_broker(service: CountedService, board: BrokerHealthBoard, topics: int, parts: int) -> None:
    """The page-cache hint on, an hour's window on every broker (so no group reads beyond it), broker 2 slow."""
    leaders = {(f"topic-{t:05d}", p): 1 + (t + p) % 3 for t in range(topics) for p in range(parts)}
    service.set_page_cache(CLUSTER, PageCacheEstimate({1: 3600.0, 2: 3600.0, 3: 3600.0}, leaders))
    verdicts = {b: BrokerSlowness(b, b == 2, 0.0, "bench", 90.0 if b == 2 else 5.0, b == 2) for b in (1, 2, 3)}
    board.publish(CLUSTER, verdicts)


def scrape(collector: LagCollector, scrapes: int) -> tuple[Took, Took, bytes, int]:
    """Best of `scrapes` full renders (by CPU: evaluation, then every piece of text made and dropped, as the listener
    sends them), the evaluation part of that render, the text (joined outside the timing) and the most the process
    grew while a render ran (VmHWM over the RSS before it, the high-water mark reset by /proc/self/clear_refs)."""
    best: tuple[Took, Took, int] | None = None
    for _ in range(scrapes):
        base = reset_peak_rss()
        with timed() as took:
            for _piece in collector.render(generate_latest):
                pass
        grew = peak_rss() - base
        with timed() as rows_took:
            collector.service.scrape_rows(collector.service.clock_ms())
        if best is None or took.cpu_s < best[0].cpu_s:
            best = (took, rows_took, grew)
    assert best is not None
    return best[0], best[1], b"".join(collector.render(generate_latest)), best[2]


def reset_peak_rss() -> int:
    """Resets the process's VmHWM to its current RSS (Linux 4.0+) and returns that RSS in bytes."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS") * 1024


def peak_rss() -> int:
    return _status_kib("VmHWM") * 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def ingest(
    source: OffsetsTopicReader,
    stop: threading.Event,
    batch: int,
    rate: float,
    groups: int,
    parts: int,
    topics: int,
    start_ms: int,
    counted: list[int],
    holds: list[float],
    spent: list[float],
) -> None:
    """Commits to existing group-partitions through `OffsetsTopicReader.ingest`, a poll of `batch` records at a time
    (it decodes outside the service lock and applies `INGEST_CHUNK` records per hold), until `stop`; `holds` gets
    the CPU seconds of each hold of the lock, which is what a status request can wait for, and `spent` this
    thread's CPU seconds in all (what ingestion costs, thread switches included)."""
    records = [
        offset_record(f"group-{g:07d}", f"topic-{g % topics:05d}", p, 1_000_000 - 5, start_ms)
        for g in range(min(groups, max(1, batch // parts) * 4))
        for p in range(parts)
    ]
    done, began = 0, time.perf_counter()
    original = source.service.locked
    me = threading.get_ident()

    @contextmanager
    def timed_locked() -> Iterator[OffsetStore]:
        with original() as store:
            c0 = time.thread_time()
            try:
                yield store
            finally:
                if threading.get_ident() == me:
                    holds.append(time.thread_time() - c0)

    setattr(source.service, "locked", timed_locked)  # noqa: B010  # this bench's instrument only
    cpu0 = time.thread_time()
    while not stop.is_set():
        source.ingest([records[(done + i) % len(records)] for i in range(batch)])
        done += batch
        if rate > 0:
            ahead = done / rate - (time.perf_counter() - began)
            if ahead > 0:
                time.sleep(ahead)
    spent.append(time.thread_time() - cpu0)
    delattr(source.service, "locked")
    counted.append(done)


@dataclass
class StatusRun:
    """Status requests for random groups, each timed, and what a thread ingesting meanwhile did."""

    wall_s: list[float]
    cpu_s: list[float]
    """The requesting thread's CPU per request."""
    queued_s: list[float]
    """Per request, how long the kernel kept the requesting thread waiting for a core (its schedstat run delay):
    the host's load, not the process's locks."""
    rate: float
    """Records per second the ingesting thread applied meanwhile (0: none ran)."""
    holds_s: list[float]
    """CPU seconds of each of its holds of the service lock."""
    cpu_per_record_s: float
    """Its CPU seconds per record, thread switches included."""


def run_queue_s() -> float:
    """Seconds this thread has waited for a core since it started (Linux schedstat, second field, ns)."""
    return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9


def statuses(api: BurrowApi, service: LagService, args: argparse.Namespace, batch: int, now_ms: int) -> StatusRun:
    """`--statuses` requests, with a thread ingesting polls of `batch` records meanwhile (0: none)."""
    source = OffsetsTopicReader(CLUSTER, {}, service, SourceHealth(60, 0, service.clock_ms))
    route = next(r for r in api.routes() if r.pattern.endswith("/status"))
    rng = random.Random(15)
    stop, counted, holds, spent = threading.Event(), list[int](), list[float](), list[float]()
    feeder = threading.Thread(
        target=ingest,
        args=(
            source, stop, batch, args.ingest_rate, args.groups, args.partitions, args.topics, now_ms, counted, holds,
            spent,
        ),
    )  # fmt: skip
    if batch:
        feeder.start()
    latencies, cpu, queued = list[float](), list[float](), list[float]()
    began = time.perf_counter()
    for _ in range(args.statuses):
        group = f"group-{rng.randrange(args.groups):07d}"
        path = f"/v3/kafka/{CLUSTER}/consumer/{group}/status"
        request = Request("GET", path, params={"cluster": CLUSTER, "group": group})
        q0 = run_queue_s()
        t0, c0 = time.perf_counter(), time.thread_time()
        response = route.handler(request)
        latencies.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        queued.append(run_queue_s() - q0)
        if response.status != 200:
            raise SystemExit(f"{group}: status {response.status}")
    elapsed = time.perf_counter() - began
    stop.set()
    if batch:
        feeder.join()
    per_record = spent[0] / counted[0] if counted and counted[0] else 0.0
    return StatusRun(latencies, cpu, queued, counted[0] / elapsed if counted else 0.0, holds, per_record)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--hwm-samples", type=int, default=1)
    parser.add_argument("--mode", default="burrow")
    parser.add_argument("--scrapes", type=int, default=3)
    parser.add_argument("--steady-scrapes", type=int, default=2, help="scrapes before the steady-state RSS")
    parser.add_argument("--steady-granularity", choices=("partition", "group"), default="partition")
    parser.add_argument("--shuffled-names", action="store_true", help="groups arrive in no name order")
    parser.add_argument("--no-objects", action="store_true", help="skip the object path (7-12 s at 1M)")
    parser.add_argument("--statuses", type=int, default=2000)
    parser.add_argument("--statuses-only", action="store_true", help="skip the scrapes")
    parser.add_argument(
        "--batches", default="10000", help="records per poll while ingesting (10,000: the Kafka source's poll)"
    )
    parser.add_argument("--ingest-rate", type=float, default=0.0)
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    parser.add_argument(
        "--switch-interval-s", help="lag.switch_interval_s (default: the config's default; none: Python's own)"
    )
    parser.add_argument("--slow-broker", action="store_true", help="also a whole scrape while broker 2 is slow")
    args = parser.parse_args()
    args.batches = [int(b) for b in args.batches.split(",") if b]
    settings: dict[str, object] = {
        "mode": args.mode, "intervals": args.intervals, "min_distance_s": 1, "hwm_history": max(args.hwm_samples, 2),
    }  # fmt: skip
    if args.switch_interval_s is not None:
        settings["switch_interval_s"] = None if args.switch_interval_s == "none" else args.switch_interval_s
    config = LagConfig.model_validate(settings)
    interval = SwitchInterval(config.switch_interval_s)
    interval.start()
    print(f"switch interval: {sys.getswitchinterval() * 1000:g} ms (lag.switch_interval_s {config.switch_interval_s})")
    now = [0]
    board = BrokerHealthBoard()
    service = CountedService(config, clock_ms=lambda: now[0], broker_health=board)
    print(f"load average before: {load()}")
    log = FigureLog("lag_scrape_bench")
    at = f"{args.groups}x{args.partitions}" + (", shuffled" if args.shuffled_names else "")
    gc.collect()
    rss_before = rss_bytes()
    end_ms = fill(
        service, args.groups, args.partitions, args.topics, args.intervals, args.hwm_samples, args.shuffled_names
    )
    now[0] = end_ms + 1000
    gp = args.groups * args.partitions
    gc.collect()
    rss_filled = rss_bytes()
    print(
        f"workload: {args.groups:,} groups x {args.partitions} partitions = {gp:,} group-partitions, "
        f"{args.topics:,} topics, intervals={args.intervals}, {args.hwm_samples} HWM sample(s), mode {args.mode}"
    )

    if args.steady_scrapes:
        collector = LagCollector(service, args.steady_granularity)
        for _ in range(args.steady_scrapes):
            for _piece in collector.render(generate_latest):
                pass
        gc.collect()
        rss_steady = rss_bytes()
        print(
            f"RSS: {(rss_filled - rss_before) / gp:,.0f} B per group-partition after the fill, "
            f"{(rss_steady - rss_before) / gp:,.0f} B after {args.steady_scrapes} scrapes at "
            f"{args.steady_granularity} granularity (steady state, load {load()})"
        )
        log.add("lag_scrape.rss_per_group_partition", at, (rss_filled - rss_before) / gp, "B")
        log.add("lag_scrape.rss_per_group_partition_steady", at, (rss_steady - rss_before) / gp, "B")

    digests: dict[str, bytes] = {}
    cpu: dict[str, float] = {}
    for granularity in () if args.statuses_only else ("partition", "group"):
        collector = LagCollector(service, granularity)
        took, rows_took, text, grew = scrape(collector, args.scrapes)
        digests[granularity], cpu[granularity] = hashlib.sha256(text).digest(), took.cpu_s
        lines = text.count(b"\n") - 2 * text.count(b"# TYPE")
        zipped = []
        for level in sorted({GZIP_LEVEL, 9}):  # ours, and client_python's
            with timed() as gz_took:
                size = len(gzip.compress(text, level))
            zipped.append(f"level {level}: {size:,} B in {gz_took.cpu_s:.2f} s CPU")
        print(f"scrape, metrics_granularity {granularity} (best of {args.scrapes}, load {load()}):")
        print(
            f"  render:      {took.cpu_s:8.2f} s CPU, {took.wall_s:.2f} s wall   target <= "
            f"{TARGET_SCRAPE_CPU_S[granularity]} s CPU"
        )
        print(f"    of which evaluation and arrays (scrape_rows): {rows_took.cpu_s:.2f} s CPU")
        log.add("lag_scrape.render_cpu", f"{at}, {granularity}", took.cpu_s, "s")
        print(f"    the process grew by at most {grew / 2**20:,.0f} MiB while it ran (text streamed in pieces)")
        print(f"  output:      {len(text):,} B, {lines:,} samples; gzip {', '.join(zipped)}")
        del text

    if not (args.no_objects or args.statuses_only):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the oracle lives under tests/
        from tests.support.lag_metrics_oracle import ObjectLagCollector

        with timed() as took:
            old = encode_families(generate_latest, list(ObjectLagCollector(service, "partition").collect()))
        same = "identical" if hashlib.sha256(old).digest() == digests["partition"] else "DIFFERENT"
        print(
            f"object path (all_statuses + client_python), partition: {took.cpu_s:.2f} s CPU, {took.wall_s:.2f} s "
            f"wall; its text and the render's: {same}; CPU ratio render/objects {cpu['partition'] / took.cpu_s:.3f}"
        )

    if args.slow_broker:
        slow_broker(service, board, args.topics, args.partitions)
        granularities: tuple[Literal["partition", "group"], ...] = ("partition", "group")
        for granularity in granularities:
            registry = CollectorRegistry()
            registry.register(LagCollector(service, granularity))
            best_s, size, evaluations = float("inf"), 0, 0
            for _ in range(args.scrapes):
                service.scrapes = 0
                with timed() as took:
                    size = len(encode(registry, generate_latest))
                best_s, evaluations = min(best_s, took.cpu_s), service.scrapes
            print(
                f"whole scrape of the lag registry at {granularity} granularity, broker 2 slow (best of "
                f"{args.scrapes}, load {load()}): {best_s:.2f} s CPU, {size:,} B; every group evaluated "
                f"{evaluations} time(s) per scrape"
            )

    api = BurrowApi(service)
    for batch in [0, *args.batches] if args.statuses else []:  # --statuses 0: the scrapes only
        run = statuses(api, service, args, batch, now[0])
        ms, cpu_ms = np.array(run.wall_s) * 1000, np.array(run.cpu_s) * 1000
        unqueued_ms = ms - np.array(run.queued_s) * 1000
        what = f"while ingesting polls of {batch:,} records, {INGEST_CHUNK:,} per lock" if batch else "idle"
        print(f"status, {what} ({args.statuses:,} requests, load {load()}):")
        print(
            f"  p50 {np.percentile(ms, 50):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms, max {ms.max():.2f} ms   "
            f"target p99 <= {TARGET_STATUS_P99_MS} ms"
            + (f"; ingested meanwhile {run.rate:,.0f} records/s" if batch else "")
        )
        rate = f", {args.ingest_rate:.0f}/s" if args.ingest_rate else ""
        when = f"polls of {batch}{rate}" if batch else "idle"
        log.add("lag_scrape.status_p99", f"{at}, {when}", float(np.percentile(ms, 99)), "ms")
        print(
            f"  wall less the requesting thread's wait for a core (the host's load): p50 "
            f"{np.percentile(unqueued_ms, 50):.2f} ms, p99 {np.percentile(unqueued_ms, 99):.2f} ms, max "
            f"{unqueued_ms.max():.2f} ms"
        )
        if batch:
            print(f"  CPU of the ingesting thread per record: {run.cpu_per_record_s * 1e6:.2f} us (switches included)")
        p50, p99 = np.percentile(cpu_ms, 50), np.percentile(cpu_ms, 99)
        print(f"  CPU of the requesting thread: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        if run.holds_s:
            held = np.array(run.holds_s) * 1000
            print(
                f"  the ingesting thread held the lock {len(held):,} times: CPU p50 {np.percentile(held, 50):.2f} ms, "
                f"p99 {np.percentile(held, 99):.2f} ms, max {held.max():.2f} ms (a request waits at most one hold)"
            )
    interval.stop()
    print(f"load average after: {load()}")
    log.write(args.figures_out)


if __name__ == "__main__":
    main()
