"""Wall time of `kafka-pulse check` on a 3-broker cluster: healthy, and with one broker SIGSTOPped.

Run: python bench/check_bench.py [--runs 5]. Starts its own 3-node dev cluster in a temporary KAFKA_PULSE_HOME and
runs the real command as a fresh process each time (`python -m kafka_pulse.cli.main check --json`), so interpreter start
and imports are counted, as a cron job or Nagios would see them. Prints, per case, the median and range of the wall
time seen from outside and of the command's own `elapsed_s` (from its process's start), the exit codes, and the
peer figure: Kafka's own `kafka-topics --describe --under-replicated-partitions` (one JVM start and one metadata
read, a fraction of what `check` asks) on the same cluster, each run beside one of ours, and the ratio. Also the
floor: starting Python and importing what `check` needs, its wall and CPU. Each hung run follows a fresh SIGSTOP
of broker 2 on a healed cluster, so the broker is hung but still registered (the controller fences it after 9 s,
and a fenced broker is quick to judge).
`--base-tree DIR` (another checkout, e.g. `git archive main | tar -x -C DIR`) runs that tree's `check` too, each
of its runs beside one of ours on the same cluster, for a before/after in one run.
Jars must already be cached (`kafka-pulse dev fetch`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient
from figures import FigureLog

from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION, ensure_tools
from devstack.topology import Security
from pulse.paths import cache_dir
from pulse.ports import wait_until

REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.4
"""Issue 27's bound for a healthy check against `kafka-topics`, each run against the peer's run beside it."""


def timed(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return time.monotonic() - started, done


def timed_cpu(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child: the CPU moves far less with the host's load than the wall,
    so the regression guard compares the import floor by it (bench/compare.py)."""
    before = os.times()
    wall_s, _ = timed(argv, env, cwd)
    after = os.times()
    return wall_s, after.children_user + after.children_system - before.children_user - before.children_system


Runs = tuple[list[float], list[float], list[int]]
"""Wall times seen from outside, the command's own `elapsed_s`, exit codes."""


@dataclass(frozen=True)
class Tree:
    """A checkout whose `check` is timed: run from its own directory, so `python -m` imports its code."""

    name: str
    path: Path
    env: dict[str, str]


def tree(name: str, path: Path, env: dict[str, str]) -> Tree:
    return Tree(name, path, {**env, "PYTHONPATH": str(path)})


def check_runs(where: Tree, runs: int, *args: str, into: Runs | None = None) -> Runs:
    walls, own, codes = into if into is not None else ([], [], [])
    for _ in range(runs):
        argv = [sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json", *args]
        wall_s, done = timed(argv, where.env, where.path)
        report = json.loads(done.stdout)
        walls.append(wall_s)
        own.append(report["elapsed_s"])
        codes.append(done.returncode)
    return walls, own, codes


def await_healthy(cluster: DevCluster) -> None:
    """Every broker registered and every partition fully replicated again (after a resume)."""
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap_servers})

    def healthy() -> bool:
        metadata = admin.list_topics(timeout=10)
        partitions = [p for t in metadata.topics.values() for p in t.partitions.values()]
        return len(metadata.brokers) == 3 and all(len(p.isrs) == len(p.replicas) for p in partitions)

    if not wait_until(healthy, 120, 0.5):
        raise SystemExit("the cluster did not heal within 120 s")


def row(case: str, walls: list[float], own: list[float], codes: list[int]) -> str:
    return (
        f"| {case} | {statistics.median(walls):.2f} | {min(walls):.2f}-{max(walls):.2f} | "
        f"{statistics.median(own):.2f} | {max(own):.2f} | {sorted(set(codes))} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base-tree", type=Path, help="also time this checkout's `check`, run for run beside ours")
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pulse-check-bench-") as tmp:
        home = Path(tmp)
        cluster = DevCluster.plan(home / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT)
        cluster.up(cache_dir())
        env = {**os.environ, "KAFKA_PULSE_HOME": str(home)}
        env.pop("KAFKA_PULSE_CONFIG", None)
        trees = [tree("this tree", REPO, env)]
        if args.base_tree is not None:
            trees.append(tree(f"base ({args.base_tree})", args.base_tree.resolve(), env))
        ours = trees[0]
        try:
            timed([sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json", "--timeout", "60"], ours.env)
            floor = (
                "import kafka_pulse.cli.main, kafka_pulse.cli.check, kafka_pulse.check.health_check, "
                "kafka_pulse.clusters"
            )
            tools = ensure_tools(DEFAULT_VERSION, cache_dir())
            topics = [
                "java",
                "-cp",
                tools.classpath,
                "org.apache.kafka.tools.TopicCommand",
                "--bootstrap-server",
                cluster.spec.bootstrap_servers,
                "--describe",
                "--under-replicated-partitions",
            ]
            imports: dict[str, list[float]] = {t.name: [] for t in trees}
            imports_cpu: dict[str, list[float]] = {t.name: [] for t in trees}
            healthy: dict[str, Runs] = {t.name: ([], [], []) for t in trees}
            peer: list[float] = []
            for _ in range(args.runs):  # the peer run for run beside ours: a burst of load hits both
                for t in trees:
                    wall_s, cpu_s = timed_cpu([sys.executable, "-c", floor], t.env, t.path)
                    imports[t.name].append(wall_s)
                    imports_cpu[t.name].append(cpu_s)
                    check_runs(t, 1, into=healthy[t.name])
                peer.append(timed(topics, env)[0])
            hung: dict[str, Runs] = {t.name: ([], [], []) for t in trees}
            for _ in range(args.runs):
                for t in trees:
                    await_healthy(cluster)
                    cluster.pause(2)
                    try:
                        check_runs(t, 1, into=hung[t.name])
                    finally:
                        cluster.resume(2)
        finally:
            cluster.down()
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; runs per case: {args.runs}")
    print("| case | wall median (s) | wall min-max (s) | own elapsed_s median | own elapsed_s max | exit codes |")
    print("|---|---|---|---|---|---|")
    for t in trees:
        suffix = f", {t.name}" if len(trees) > 1 else ""
        print(row(f"healthy{suffix}", *healthy[t.name]))
        print(row(f"broker 2 SIGSTOPped{suffix}", *hung[t.name]))
        print(
            f"| start-up and imports of check only (floor){suffix} | {statistics.median(imports[t.name]):.2f} | "
            f"{min(imports[t.name]):.2f}-{max(imports[t.name]):.2f} | - | - | - |"
        )
        print(
            f"| the floor's CPU (user + system){suffix} | {statistics.median(imports_cpu[t.name]):.2f} | "
            f"{min(imports_cpu[t.name]):.2f}-{max(imports_cpu[t.name]):.2f} | - | - | - |"
        )
    print(
        f"| peer: kafka-topics --describe --under-replicated-partitions | {statistics.median(peer):.2f} | "
        f"{min(peer):.2f}-{max(peer):.2f} | - | - | - |"
    )
    for t in trees:
        ratio = statistics.median(healthy[t.name][0]) / statistics.median(peer)
        paired = [ours / theirs for ours, theirs in zip(healthy[t.name][0], peer, strict=True)]
        under = sum(r <= TARGET_RATIO for r in paired)
        print(
            f"healthy check / kafka-topics, {t.name}: {ratio:.2f}x (run for run: median "
            f"{statistics.median(paired):.2f}x, {min(paired):.2f}-{max(paired):.2f}x, {under} of {len(paired)} runs "
            f"at {TARGET_RATIO}x or under)"
        )
    log, at = FigureLog("check_bench"), "3 brokers"
    log.add("check.healthy_wall", at, statistics.median(healthy[ours.name][0]), "s", peer=statistics.median(peer))
    log.add("check.stopped_broker_wall", at, statistics.median(hung[ours.name][0]), "s")
    log.add("check.stopped_broker_wall_max", at, max(hung[ours.name][0]), "s")
    log.add("check.imports_cpu", at, statistics.median(imports_cpu[ours.name]), "s")
    log.write(args.figures_out)


if __name__ == "__main__":
    main()
