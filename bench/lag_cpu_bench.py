"""CPU per commit: Debian's Burrow 1.2.1 and `kafka-pulse lag` (burrow-1.2 rules, the same
intervals, offset-refresh and min-distance) read the same Kafka 3.9 cluster while a workload of N groups commits at
a known rate; both processes' CPU (utime + stime from /proc/PID/stat) is read over the same interval.

Run: python bench/lag_cpu_bench.py [--groups 200] [--partitions 10] [--commit-interval 1] [--seconds 60]
     [--without-evaluation-log]

Workload: one topic of `--partitions` partitions, records produced at `--produce-rate` per second so HWMs move;
`--groups` groups each commit all partitions every `--commit-interval` seconds through the Admin API
(OffsetCommit for a group without members, as a simple consumer's commit), so the cluster writes
groups x partitions / interval offset-commit records per second to __consumer_offsets. Both readers consume them
all. Measured: the idle cost first (same length, no commits: HWM polling, metadata, evaluation), then the loaded
interval; CPU per commit = CPU of the loaded interval / commit records written in it, and the same with the idle
cost subtracted. Our figure is the `kafka-pulse lag` process only (a child process), never this harness.
`--without-evaluation-log` turns off the one feature of ours Burrow has no counterpart of (the Parquet log, pyarrow
with it); its figures are recorded at a scale of their own ("5000/s without the log").
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx
import yaml
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the Burrow and ZooKeeper launchers live in tests/

from figures import FigureLog

from devstack.cluster import DevCluster
from devstack.runtime import LEGACY_VERSION
from devstack.topology import Security
from pulse.lifecycle import Periodic
from pulse.paths import cache_dir
from pulse.ports import free_ports, wait_until
from tests.support.burrow import Burrow, BurrowOptions
from tests.support.zookeeper import ZooKeeper

CLUSTER = "local"
TOPIC = "cpu-bench"
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (not its children), from /proc/PID/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return (int(fields[11]) + int(fields[12])) * TICK_S


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Workload:
    """Producer thread (moving HWMs) and committing groups, at fixed rates, counting what it wrote."""

    def __init__(self, bootstrap: str, groups: int, partitions: int, commit_interval_s: float, produce_rate: int):
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        self.groups = [f"bench-{i:05d}" for i in range(groups)]
        self.partitions = partitions
        self.commit_interval_s = commit_interval_s
        self.produce_rate = produce_rate
        self.commits = 0
        """Offset-commit records written (one per group-partition per round)."""
        self.produced = 0
        self._offset = 0
        self._producing = Periodic("bench-producer", 0.1, self._produce, fixed_rate=False, first_delay_s=0.1)

    def start_producing(self) -> None:
        self._producing.start()

    def _produce(self) -> None:
        """A tenth of a second's records."""
        for i in range(self.produce_rate // 10):
            self.producer.produce(TOPIC, value=b"x" * 100, partition=i % self.partitions)
        self.produced += self.produce_rate // 10
        self.producer.poll(0)

    def commit_round(self) -> None:
        """Every group commits every partition once (offsets trail the log end)."""
        self._offset += 1
        futures: list[Future[Any]] = []
        for group in self.groups:
            tps = [TopicPartition(TOPIC, p, self._offset) for p in range(self.partitions)]
            request = [ConsumerGroupTopicPartitions(group, tps)]
            futures += self.admin.alter_consumer_group_offsets(request, request_timeout=30).values()
        for future in futures:
            future.result(timeout=60)
        self.commits += len(self.groups) * self.partitions

    @property
    def last_offset(self) -> int:
        return self._offset

    def run_commits(self, seconds: float) -> int:
        """Commit rounds every `commit_interval_s` for `seconds`; returns commit records written."""
        before = self.commits
        deadline = time.monotonic() + seconds
        next_round = time.monotonic()
        while next_round < deadline:
            self.commit_round()
            next_round += self.commit_interval_s
            time.sleep(max(0.0, next_round - time.monotonic()))  # the workload's commit cadence
        return self.commits - before

    def stop(self) -> None:
        self._producing.stop(timeout_s=30)
        self.producer.flush(30)


def measure(pids: dict[str, int], action: Any) -> tuple[dict[str, float], float, Any]:
    """CPU seconds of each process and the wall time over `action()`."""
    start = {name: cpu_seconds(pid) for name, pid in pids.items()}
    t0 = time.monotonic()
    result = action()
    wall = time.monotonic() - t0
    return {name: cpu_seconds(pid) - start[name] for name, pid in pids.items()}, wall, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--commit-interval", type=float, default=1.0, help="Seconds between a group's commits.")
    parser.add_argument("--produce-rate", type=int, default=1000, help="Records per second into the topic.")
    parser.add_argument("--seconds", type=float, default=60.0, help="Length of the idle and of the loaded interval.")
    parser.add_argument("--warmup", type=float, default=20.0, help="Loaded seconds before measuring.")
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--offset-refresh", type=int, default=10)
    parser.add_argument("--min-distance", type=int, default=1)
    parser.add_argument(
        "--without-evaluation-log", action="store_true", help="lag.evaluation_log.enabled false (Burrow has none)"
    )
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="lag-cpu-bench-"))
    cluster = DevCluster.plan(home / "kafka", 1, LEGACY_VERSION, Security.PLAINTEXT)
    cluster.up(cache_dir())
    zookeeper = ZooKeeper(home / "zookeeper")
    burrow: Burrow | None = None
    ours: subprocess.Popen[bytes] | None = None
    workload: Workload | None = None
    try:
        zookeeper.start()
        bootstrap = cluster.spec.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(timeout=30)
        workload = Workload(bootstrap, args.groups, args.partitions, args.commit_interval, args.produce_rate)
        workload.start_producing()
        workload.commit_round()  # __consumer_offsets must exist before Burrow starts

        options = BurrowOptions(
            offset_refresh_s=args.offset_refresh,
            intervals=args.intervals,
            min_distance_s=args.min_distance,
            expire_cache_s=10,
            # log_level stays "info": readiness is read from Burrow's "starting consumers" info line
            zookeeper_root_path="/burrow-bench",
        )
        burrow = Burrow(home / "burrow", [zookeeper.address], bootstrap.split(","), CLUSTER, options).start()
        port = free_ports(1)[0]
        config = {
            "clusters": [{"name": CLUSTER, "bootstrap_servers": bootstrap}],
            "lag": {
                "mode": "burrow-1.2",
                "intervals": args.intervals,
                "offset_refresh_s": args.offset_refresh,
                "min_distance_s": args.min_distance,
                "group_deny": "^console-consumer-",
                "listen": f"127.0.0.1:{port}",
                "evaluation_log": {"enabled": not args.without_evaluation_log},
            },
        }
        (home / "pulse.yaml").write_text(yaml.safe_dump(config))
        log = open(home / "lag.log", "wb")  # noqa: SIM115  # kept open for the child's lifetime
        ours = subprocess.Popen(
            [sys.executable, "-m", "kafka_pulse.cli.main", "lag", "--config", str(home / "pulse.yaml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "KAFKA_PULSE_HOME": str(home / "state")},
        )
        http = httpx.Client(timeout=10, trust_env=False)
        ours_url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            try:
                return http.get(f"{ours_url}/burrow/admin/ready").text == "READY"
            except httpx.HTTPError:
                return False

        assert wait_until(ready, 120, interval_s=0.5), (home / "lag.log").read_text()[-2000:]
        pids = {"burrow-1.2.1": burrow.pid, "kafka-pulse lag": ours.pid}

        def both_see_all() -> bool:
            want = set(workload.groups)
            theirs = set(http.get(f"{burrow.url}/v3/kafka/{CLUSTER}/consumer").json().get("consumers") or [])
            mine = set(http.get(f"{ours_url}/v3/kafka/{CLUSTER}/consumer").json().get("consumers") or [])
            return want <= theirs and want <= mine

        workload.run_commits(args.warmup)
        assert wait_until(both_see_all, 120, interval_s=1), "a reader did not store every group"

        def newest(url: str) -> int | None:
            body = http.get(f"{url}/v3/kafka/{CLUSTER}/consumer/{workload.groups[-1]}/lag").json()
            ends = [p["end"]["offset"] for p in (body.get("status") or {}).get("partitions") or [] if p.get("end")]
            return min(ends) if len(ends) == args.partitions else None

        def loaded() -> int:
            """Commit for `--seconds`, then wait until both readers stored the last round (catch-up is counted)."""
            commits = workload.run_commits(args.seconds)
            last = workload.last_offset
            caught_up = wait_until(lambda: newest(burrow.url) == last and newest(ours_url) == last, 120, 0.2)
            assert caught_up, f"a reader is behind: burrow {newest(burrow.url)}, ours {newest(ours_url)}, want {last}"
            return commits

        idle_cpu, idle_wall, _ = measure(pids, lambda: time.sleep(args.seconds))  # no commits: fixed costs
        load_cpu, load_wall, commits = measure(pids, loaded)
        rss = {name: rss_mb(pid) for name, pid in pids.items()}

        print(
            f"workload: {args.groups} groups x {args.partitions} partitions every {args.commit_interval:g} s "
            f"= {commits / load_wall:,.0f} commit records/s over {load_wall:.1f} s ({commits:,} commits); "
            f"{args.produce_rate} records/s produced; intervals={args.intervals} offset-refresh="
            f"{args.offset_refresh} s min-distance={args.min_distance} s"
        )
        print(
            f"{'process':<18} {'idle CPU %':>10} {'loaded CPU %':>12} {'us/commit':>10} {'us/commit-idle':>15} "
            f"{'RSS MB':>7}"
        )
        per_commit: dict[str, float] = {}
        for name in pids:
            idle_rate = idle_cpu[name] / idle_wall
            per_commit[name] = load_cpu[name] / commits * 1e6
            net = (load_cpu[name] - idle_rate * load_wall) / commits * 1e6
            print(
                f"{name:<18} {100 * idle_rate:>10.1f} {100 * load_cpu[name] / load_wall:>12.1f} "
                f"{per_commit[name]:>10.1f} {net:>15.1f} {rss[name]:>7.0f}"
            )
        ratio = per_commit["kafka-pulse lag"] / per_commit["burrow-1.2.1"]
        print(f"ratio kafka-pulse / Burrow, CPU per commit: {ratio:.2f}")
        record, at = FigureLog("lag_cpu_bench"), f"{args.groups * args.partitions / args.commit_interval:.0f}/s"
        at += " without the log" if args.without_evaluation_log else ""
        ours_name, peer = "kafka-pulse lag", "burrow-1.2.1"
        record.add("lag_cpu.cpu_per_commit", at, per_commit[ours_name], "µs", peer=per_commit[peer])
        record.add("lag_cpu.rss", at, rss[ours_name], "MB", peer=rss[peer])
        idle = {name: 100 * idle_cpu[name] / idle_wall for name in pids}
        record.add("lag_cpu.idle_cpu", at, idle[ours_name], "% of a core", peer=idle[peer])
        record.write(args.figures_out)
    finally:
        if workload is not None:
            workload.stop()
        if ours is not None and ours.poll() is None:
            ours.send_signal(signal.SIGTERM)
            try:
                ours.wait(timeout=60)
            except subprocess.TimeoutExpired:
                ours.kill()
        if burrow is not None:
            burrow.stop()
        zookeeper.stop()
        cluster.down()


if __name__ == "__main__":
    main()
