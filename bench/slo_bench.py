"""SLO engine benchmark: 1,000 SLOs x 30 days of per-minute buckets, evaluated by the Spark job in local
mode, on a Spark standalone cluster (`--standalone`: a master and two one-core workers from pyspark's own Spark on
loopback, devstack/spark_standalone.py) and by a single-node pandas baseline on the same Parquet data, in one run.

Each engine runs in its own child process so its peak memory and CPU (the process tree: Python, and Spark's driver
JVM) are its own; on the standalone cluster the executors' CPU and peak memory (the workers' process trees) are
reported beside the driver's. All end in the same pure evaluation (slo/evaluation.py), so the bench also checks
that they agree.

    python bench/slo_bench.py [--slos 1000] [--days 30] [--master local[2]] [--standalone] [--data DIR] [--stream]

With `--stream` it also runs `slo stream`'s engine warm on the same 30 days, fed new events through a 1-node Kafka
(bench/slo_stream_cycle.py): its cycle against the batch job's rescan and pandas.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from figures import FigureLog

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

AT = datetime(2024, 4, 1, tzinfo=UTC)
"""Evaluation time; the data covers the 30 days before it."""


def generate(directory: Path, slos: int, days: int, seed: int = 7) -> int:
    """Per-minute buckets (time, slo, good, total) for `slos` SLOs; a tenth of them has a 1-hour outage at a random
    time, the rest a small random error rate. One file per 100 SLOs. Returns the row count."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    count = days * 1440
    start_s = int((AT - timedelta(days=days)).timestamp())
    times = (start_s + 60 * np.arange(count, dtype=np.int64)) * 1_000_000
    rows = 0
    for first in range(0, slos, 100):
        ids = range(first, min(slos, first + 100))
        parts = []
        for sid in ids:
            total = rng.poisson(1000, count).astype(np.int32)
            bad = rng.binomial(total, 0.0005).astype(np.int32)
            if sid % 10 == 0:
                begin = int(rng.integers(0, count - 60))
                bad[begin : begin + 60] = total[begin : begin + 60]
            parts.append((sid, total, bad))
        table = pa.table(
            {
                "time": pa.array(np.tile(times, len(parts)), pa.timestamp("us", tz="UTC")),
                "slo": pa.DictionaryArray.from_arrays(
                    np.repeat(np.arange(len(parts), dtype=np.int32), count),
                    pa.array([f"slo-{sid:04d}" for sid, _, _ in parts]),
                ),
                "good": np.concatenate([t - b for _, t, b in parts]),
                "total": np.concatenate([t for _, t, _ in parts]),
            }
        )
        pq.write_table(table, directory / f"part-{first // 100:03d}.parquet", row_group_size=1_000_000)
        rows += table.num_rows
    return rows


def spec(data: Path) -> list[Any]:
    """One spec, one instance per `slo` label value: how per-topic or per-group SLOs are written."""
    return [
        {
            "name": "bench",
            "source": {"type": "events", "path": str(data)},
            "good": "good",
            "total": "total",
            "objective": 99.9,
            "window": "30d",
            "group_by": ["slo"],
        }
    ]


def digest(results: list[Any]) -> dict[str, Any]:
    """What both engines must agree on, per instance."""
    out: dict[str, Any] = {}
    for r in results:
        key = next(iter(r.labels.values()), "")  # the one group_by label: `slo` (Parquet) or `group` (stream)
        out[key] = {
            "sli": None if r.sli is None else round(r.sli, 12),
            "burn": {w: None if v is None else round(v, 9) for w, v in r.burn_rates.items()},
            "firing": [a.firing for a in r.alerts],
            "exhaustion_at": None if r.exhaustion_at is None else r.exhaustion_at.isoformat(),
        }
    return out


# --- engines (run in a child process) ---------------------------------------------------------------------------


def run_spark(data: Path, master: str) -> dict[str, Any]:
    from slo import job
    from slo.session import spark_session
    from slo.spec import parse_slos

    slos = parse_slos([("bench", spec(data))], None)
    t0 = time.perf_counter()
    spark = spark_session(master, extra={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"})
    t1 = time.perf_counter()
    results = job.evaluate(spark, slos, AT)
    t2 = time.perf_counter()
    again = job.evaluate(spark, slos, AT)  # a second run on the warm session, as `run` would schedule it
    t3 = time.perf_counter()
    assert digest(again) == digest(results)
    spark.stop()
    return {
        "start_s": t1 - t0,
        "eval_s": t2 - t1,
        "warm_eval_s": t3 - t2,
        "instances": len(results),
        "digest": digest(results),
    }


def run_pandas(data: Path) -> dict[str, Any]:
    """The same evaluation on one node: pyarrow read, numpy keys, pandas groupby, then slo/evaluation.py."""
    import pandas as pd  # type: ignore[import-untyped]  # no stubs; pandas-stubs is not a dependency

    from slo.evaluation import Rollup, data_start, evaluate_instance, period_bounds, sub_hour_windows_s
    from slo.policy import HOUR_S
    from slo.spec import parse_slos

    (slo,) = parse_slos([("bench", spec(data))], None)
    t0 = time.perf_counter()
    at_s = int(AT.timestamp())
    lo_s = int(data_start(slo, AT).timestamp())
    period_s = int(period_bounds(slo, AT)[0].timestamp())
    table = pq.read_table(data, columns=["time", "slo", "good", "total"])
    ts = table.column("time").cast(pa.timestamp("s", tz="UTC")).cast(pa.int64()).to_numpy()
    keep = (ts >= lo_s) & (ts < at_s)
    labels = table.column("slo").combine_chunks()
    frame = pd.DataFrame(
        {
            "slo": pd.Categorical.from_codes(labels.indices.to_numpy()[keep], labels.dictionary.to_pylist()),
            "k": (at_s - 1 - ts[keep]) // HOUR_S,
            "good": table.column("good").to_numpy()[keep].astype(np.float64),
            "total": table.column("total").to_numpy()[keep].astype(np.float64),
        }
    )
    t_keep = ts[keep]
    subs = sub_hour_windows_s(slo)
    for w in subs:
        recent = t_keep >= at_s - w
        frame[f"good_{w}"] = np.where(recent, frame["good"], 0.0)
        frame[f"total_{w}"] = np.where(recent, frame["total"], 0.0)
    in_period = t_keep >= period_s
    frame["p_good"] = np.where(in_period, frame["good"], 0.0)
    frame["p_total"] = np.where(in_period, frame["total"], 0.0)
    sums = frame.groupby(["slo", "k"], observed=True, sort=False).sum()
    results = []
    for name, group in sums.groupby(level="slo", observed=True):
        k = group.index.get_level_values("k").to_numpy(dtype=np.int64)
        size = int(k.max()) + 1
        rollup = Rollup(
            hour_good=np.bincount(k, weights=group["good"].to_numpy(), minlength=size).astype(np.float64),
            hour_total=np.bincount(k, weights=group["total"].to_numpy(), minlength=size).astype(np.float64),
            period_good=float(group["p_good"].sum()),
            period_total=float(group["p_total"].sum()),
            sub_hour={w: _window(group, w) for w in subs},
        )
        results.append(evaluate_instance(slo, {"slo": str(name)}, AT, rollup))
    t1 = time.perf_counter()
    return {"eval_s": t1 - t0, "instances": len(results), "digest": digest(results)}


def _window(group: Any, w: int) -> Any:
    from slo.policy import WindowSums

    total = float(group[f"total_{w}"].sum())
    return WindowSums(total - float(group[f"good_{w}"].sum()), total)


# --- parent: child processes, peak RSS ------------------------------------------------------------------------


def _tree(pids: list[int]) -> list[int]:
    """`pids` and every descendant, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], list(pids)
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def _rss_kib(pids: list[int]) -> int:
    total = 0
    for current in pids:
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def _cpu_ticks(pid: int) -> int:
    """utime + stime of one process, in clock ticks (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


class TreeSampler:
    """Peak RSS of the process trees under `roots`, and their CPU: the last seen CPU time of every process that
    appeared in them (sampled every 0.2 s, so a process living less than that may be missed)."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.peak_kib = 0
        self.ticks: dict[int, int] = {}

    def sample(self) -> None:
        pids = _tree(self.roots)
        self.peak_kib = max(self.peak_kib, _rss_kib(pids))
        for pid in pids:
            self.ticks[pid] = max(self.ticks.get(pid, 0), _cpu_ticks(pid))

    @property
    def cpu_s(self) -> float:
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")


def measure(
    argv: list[str], others: list[int] | None = None, stderr_to: Path | None = None
) -> tuple[dict[str, Any], float, float, float, TreeSampler]:
    """Run a child engine; (its JSON result, wall seconds, peak tree RSS in MiB, tree CPU seconds, and a sampler
    of the `others` trees (the standalone workers, whose executors do the work) over the same time)."""
    from pulse.lifecycle import Periodic

    started = time.perf_counter()
    err = open(stderr_to, "w") if stderr_to is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO)
    mine, theirs = TreeSampler([child.pid]), TreeSampler(others or [])
    base = {pid: _cpu_ticks(pid) for pid in others or []}  # the workers' own CPU before this run

    def sample() -> None:
        mine.sample()
        theirs.sample()

    sampler = Periodic("bench-sampler", 0.2, sample, fixed_rate=False)
    sampler.start()
    out, _ = child.communicate()
    if stderr_to is not None:
        err.close()  # type: ignore[union-attr]
    sampler.stop(timeout_s=30)
    if child.returncode != 0:
        raise SystemExit(f"{argv[-1]} engine failed with exit {child.returncode}")
    for pid, ticks in base.items():
        theirs.ticks[pid] -= ticks
    result = json.loads(out.strip().splitlines()[-1])
    return result, time.perf_counter() - started, mine.peak_kib / 1024, mine.cpu_s, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slos", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--standalone", action="store_true", help="also run on a standalone cluster of 2 workers")
    parser.add_argument("--data", type=Path, help="reuse (or create) the data here instead of a temporary dir")
    parser.add_argument("--stream", action="store_true", help="also the stream's warm cycles (a 1-node Kafka)")
    parser.add_argument("--cycles", type=int, default=5, help="warm stream cycles of one new minute each")
    parser.add_argument("--backlog", type=int, default=100_000, help="events per backlog read by the stream")
    parser.add_argument("--engine", choices=["spark", "pandas", "stream"], help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    if args.engine == "spark":
        print(json.dumps(run_spark(args.data, args.master)))
        return
    if args.engine == "pandas":
        print(json.dumps(run_pandas(args.data)))
        return
    if args.engine == "stream":
        from slo_stream_cycle import run_stream

        found = run_stream(args.data, args.bootstrap, args.master, args.slos, AT, args.cycles, args.backlog, digest)
        print(json.dumps(found))
        return
    with tempfile.TemporaryDirectory(prefix="slo-bench-") as scratch:
        data = args.data or Path(scratch) / "buckets"
        if not data.exists():
            t0 = time.perf_counter()
            rows = generate(data, args.slos, args.days)
            print(f"generated {rows:,} per-minute buckets in {time.perf_counter() - t0:.1f} s under {data}")
        size_mib = sum(p.stat().st_size for p in data.glob("*.parquet")) / 2**20
        base = [sys.executable, __file__, "--data", str(data), "--engine"]
        local = measure([*base, "spark", "--master", args.master])
        table = [_spark_row(f"Spark {args.master}", local, False)]
        digests = {table[0][0]: table[0][1]}
        if args.standalone:
            from devstack.spark_standalone import SparkStandalone

            with SparkStandalone(Path(scratch) / "standalone", workers=2, worker_memory="2g") as cluster:
                workers = [w.pid for w in cluster.workers]
                run = measure([*base, "spark", "--master", cluster.master_url], workers)
            table.append(_spark_row("Spark standalone, 2 workers x 1 core", run, True))
            digests[table[-1][0]] = table[-1][1]
        pandas, pandas_wall, pandas_mib, pandas_cpu, _ = measure([*base, "pandas"])
        streamed = None
        if args.stream:
            from slo_stream_cycle import measure_stream

            try:
                argv = [*base, "stream", "--master", args.master, "--slos", str(args.slos)]
                streamed = measure_stream(argv, args, measure)
                digests["stream (refilled 30 days)"] = streamed[0]["digest"]
            except SystemExit as failed:  # the batch and pandas figures are still printed
                print(f"stream: {failed}")
        load = os.getloadavg()[0]
        print(f"data: {args.slos} SLOs x {args.days} d x 1440 min, {size_mib:.0f} MiB Parquet; load average {load:.1f}")
        print(
            "| engine | evaluation (s) | warm re-run (s) | session start (s) | process wall (s) | driver CPU (s) "
            "| driver peak RSS (MiB) | executors CPU (s) | executors peak RSS (MiB) |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for _, _, line in table:
            print(line)
        print(
            f"| pandas (1 core) | {pandas['eval_s']:.1f} | - | - | {pandas_wall:.1f} | {pandas_cpu:.1f} "
            f"| {pandas_mib:.0f} | - | - |"
        )
        if streamed is not None:
            from slo_stream_cycle import report_stream

            report_stream(streamed, pandas["eval_s"], local[0]["warm_eval_s"])
        for name, digest_of in digests.items():
            print(f"{name}: results agree with pandas: {digest_of == pandas['digest']}")
        print(f"instances: {pandas['instances']} (pandas)")
        log, at = FigureLog("slo_bench"), f"{args.slos} SLOs x {args.days} d, Spark {args.master}"
        log.add("slo.evaluation", at, local[0]["eval_s"], "s", peer=pandas["eval_s"])
        log.add("slo.peak_rss", at, local[2], "MiB", peer=pandas_mib)
        if streamed is not None:
            log.add("slo.stream_warm_cycle", at, streamed[0]["cycle_median_s"], "s", peer=local[0]["warm_eval_s"])
        log.write(args.figures_out)


def _spark_row(
    name: str, run: tuple[dict[str, Any], float, float, float, TreeSampler], cluster: bool
) -> tuple[str, dict[str, Any], str]:
    """(engine name, its result digest, its table row)."""
    result, wall, mib, cpu, executors = run
    remote = f"{executors.cpu_s:.1f} | {executors.peak_kib / 1024:.0f}" if cluster else "- | -"
    line = (
        f"| {name} | {result['eval_s']:.1f} | {result['warm_eval_s']:.1f} | {result['start_s']:.1f} | {wall:.1f} "
        f"| {cpu:.1f} | {mib:.0f} | {remote} |"
    )
    return name, result["digest"], line


if __name__ == "__main__":
    main()
