"""Helpers of bench/large_cluster_bench.py: process CPU and RSS from /proc, child `kafka-pulse` commands, /metrics
scrapes and histogram quantiles, and the thread that keeps every group committing."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from devstack.populate import COMMIT_CLIENTS, commit_groups
from devstack.topology import DataShape
from pulse.lifecycle import Periodic

REPO = Path(__file__).resolve().parents[1]
CLUSTER = "local"
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
RECORDS = 10
"""Records written to each partition when the shape is created; commits stay a few below."""


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {text}", flush=True)


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (its children, theirs, ...), from /proc."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in os.listdir(f"/proc/{current}/task"):
            try:
                children = [int(c) for c in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def answers(http: httpx.Client, url: str) -> bool:
    """Whether `url` answers 200 now."""
    try:
        return http.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_tool(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall, CPU (of the child), exit code and the output's line count of one command."""
    cpu0, wall0 = children_cpu(), time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    wall, cpu = time.monotonic() - wall0, children_cpu() - cpu0
    if done.returncode != 0:
        say(f"{argv[-3:]} exited {done.returncode}: {done.stderr[-1500:]}")
    return wall, cpu, done.returncode, str(len(done.stdout.splitlines()))


class Child:
    """A `kafka-pulse` command as a child process with its own config and log."""

    def __init__(self, home: Path, name: str, config: dict[str, Any], *args: str) -> None:
        self.name = name
        path = home / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        self.log_path = home / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115  # open for the child's lifetime
        argv = [sys.executable, "-m", "kafka_pulse.cli.main", name, "--config", str(path), *args]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO, env=env_for(home))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "KAFKA_PULSE_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("KAFKA_PULSE_CONFIG", None)
    return env


def scrape(http: httpx.Client, url: str, runs: int = 3) -> dict[str, float]:
    """Median wall of `runs` GETs of /metrics, its bytes and series (sample lines)."""
    walls = []
    text = ""
    for _ in range(runs):
        t0 = time.monotonic()
        text = http.get(f"{url}/metrics").text
        walls.append(time.monotonic() - t0)
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return {"scrape_s": sorted(walls)[len(walls) // 2], "bytes": len(text.encode()), "series": series}


def quantiles(text: str, family: str, qs: tuple[float, ...] = (0.5, 0.99)) -> dict[str, float]:
    """Quantiles of a histogram summed over every label set, interpolated within buckets like histogram_quantile."""
    buckets: dict[float, float] = {}
    for fam in text_string_to_metric_families(text):
        if fam.name != family:
            continue
        for sample in fam.samples:
            if sample.name.endswith("_bucket"):
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] == 0:
        return {f"p{int(q * 100)}": float("nan") for q in qs}
    total = buckets[bounds[-1]]
    out: dict[str, float] = {"count": total}
    for q in qs:
        rank, low, below = q * total, 0.0, 0.0
        for le in bounds:
            if buckets[le] >= rank:
                upper = le if le != float("inf") else low
                inside = buckets[le] - below
                out[f"p{int(q * 100)}"] = low + (upper - low) * ((rank - below) / inside if inside else 1.0)
                break
            low, below = le, buckets[le]
    return out


class NoReassign:
    """The planner is timed on a topic already in place; a reassignment here would be a finding, not a cost."""

    def reassign(self, topic: str, assignment: Any, bootstrap: Any = ()) -> None:
        raise AssertionError(f"the planner asked to reassign {topic}: {dict(assignment)}")


def delta_quantiles(before: str, after: str, family: str) -> dict[str, float]:
    """Quantiles of the observations made between two scrapes (bucket counts subtracted)."""

    def counts(text: str) -> dict[tuple[Any, ...], float]:
        out = {}
        for fam in text_string_to_metric_families(text):
            if fam.name == family:
                for s in fam.samples:
                    if s.name.endswith("_bucket"):
                        out[tuple(sorted(s.labels.items()))] = s.value
        return out

    b, a = counts(before), counts(after)
    lines = []
    for key, value in a.items():
        labels = ",".join(f'{k}="{v}"' for k, v in key)
        lines.append(f"{family}_bucket{{{labels}}} {value - b.get(key, 0.0)}")
    return quantiles(f"# TYPE {family} histogram\n" + "\n".join(lines) + "\n", family)


def offset_commit_records(http: httpx.Client, url: str) -> float:
    """OffsetCommit records `kafka-pulse lag` has read from `__consumer_offsets` (its own counter)."""
    text = http.get(f"{url}/metrics").text
    for fam in text_string_to_metric_families(text):
        if fam.name == "kafka_pulse_lag_offsets_records":
            return sum(
                s.value for s in fam.samples if s.labels.get("kind") == "OffsetCommit" and s.name.endswith("_total")
            )
    return 0.0


class Committer:
    """Every group commits every partition of its topic once a round, rounds `every_s` apart, on `clients` threads
    of their own admin client each (one client committed about one group a second on the 10,000-partition
    cluster, so the groups are split as `devstack.populate.commit_in_parallel` splits them)."""

    def __init__(self, bootstrap: str, shape: DataShape, every_s: float, clients: int = COMMIT_CLIENTS) -> None:
        self.admins = [AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}) for _ in range(clients)]
        self.shape = shape
        self.every_s = every_s
        self.commits = 0
        self.rounds = 0
        self._lock = threading.Lock()
        self._loops = [self._loop(i) for i in range(clients)]

    def _loop(self, index: int) -> Periodic:
        """Client `index`'s share of the groups, one round every `every_s` (a round the stop cuts short ends)."""
        rounds = 0

        def commit_round() -> None:
            nonlocal rounds
            flip = rounds % 2  # offsets alternate between two values below the end: every commit is a record

            def offset(group: int, _partition: int) -> int:
                return max(0, RECORDS - 1 - group % 4 - flip)

            part = (index, len(self.admins))
            stop = loop.stopping.is_set
            done = commit_groups(self.admins[index], self.shape, offset, in_flight=50, stop=stop, part=part)
            rounds += 1
            with self._lock:
                self.commits += done
                self.rounds = max(self.rounds, rounds)

        loop = Periodic(f"committer-{index}", self.every_s, commit_round)
        return loop

    @contextmanager
    def running(self) -> Iterator[Committer]:
        for loop in self._loops:
            loop.start()
        try:
            yield self
        finally:
            for loop in self._loops:
                loop.stopping.set()
            for loop in self._loops:
                loop.stop(timeout_s=300)


def all_served(http: httpx.Client, url: str, shape: DataShape, pending: set[str]) -> Callable[[], bool]:
    """True once every group's /lag lists all its partitions; only groups still pending are asked again."""

    def check() -> bool:
        try:
            listed = set(http.get(f"{url}/v3/kafka/{CLUSTER}/consumer").json().get("consumers") or [])
        except (httpx.HTTPError, ValueError):
            return False
        for group in sorted(pending & listed):
            try:
                body = http.get(f"{url}/v3/kafka/{CLUSTER}/consumer/{group}/lag").json()
            except (httpx.HTTPError, ValueError):
                return False
            parts = (body.get("status") or {}).get("partitions") or []
            if len([p for p in parts if p.get("end")]) >= shape.partitions_per_topic:
                pending.discard(group)
        return not pending

    return check


def family_counts(text: str) -> dict[str, int]:
    """Sample lines per metric name (histogram buckets counted under their family's name)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            for suffix in ("_bucket", "_count", "_sum"):
                name = name.removesuffix(suffix)
            out[name] = out.get(name, 0) + 1
    return out


def jmx_successes(text: str) -> list[float]:
    """When each broker's latest JMX scrape succeeded (`kafka_pulse_jmx_last_success_timestamp_seconds`), so a
    caller can await every broker's next round instead of sleeping a guess."""
    return [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("kafka_pulse_jmx_last_success_timestamp_seconds{")
    ]


def backlog_read(http: httpx.Client, url: str, groups: int) -> Callable[[], bool]:
    """True once `kafka-pulse lag` reports its cluster judgeable (`kafka_pulse_lag_source_up` 1) and lists at least
    `groups` consumer groups."""

    def check() -> bool:
        try:
            text = http.get(f"{url}/metrics").text
            listed = http.get(f"{url}/v3/kafka/{CLUSTER}/consumer").json().get("consumers") or []
        except (httpx.HTTPError, ValueError):
            return False
        up = [line for line in text.splitlines() if line.startswith("kafka_pulse_lag_source_up{")]
        return bool(up) and all(line.endswith(" 1.0") for line in up) and len(listed) >= groups

    return check
