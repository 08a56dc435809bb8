"""Wall time of `kafka-pulse check` on a 3-broker cluster: healthy, and with one broker SIGSTOPped.

Run: python bench/check_bench.py [--runs 5]. Starts its own 3-node dev cluster in a temporary KAFKA_PULSE_HOME and
runs the real command as a fresh process each time (`python -m kafka_pulse.cli.main check --json`), so interpreter start
and imports are counted, as a cron job or Nagios would see them. Prints, per case, the median and range of the wall
time seen from outside and of the command's own `elapsed_s` (from its process's start), the exit codes, and the
peer figure: Kafka's own `kafka-topics --describe --under-replicated-partitions` (one JVM start and one metadata
read, a fraction of what `check` asks) on the same cluster, and the ratio. Also the floor: starting Python and
importing what `check` needs. Each hung run follows a fresh SIGSTOP of broker 2 on a healed cluster, so the broker
is hung but still registered (the controller fences it after 9 s, and a fenced broker is quick to judge).
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
from pathlib import Path

from confluent_kafka.admin import AdminClient

from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION, ensure_tools
from devstack.topology import Security
from pulse.paths import cache_dir
from pulse.ports import wait_until

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    return time.monotonic() - started, done


def check_runs(env: dict[str, str], runs: int, *args: str) -> tuple[list[float], list[float], list[int]]:
    walls, own, codes = [], [], []
    for _ in range(runs):
        wall_s, done = timed([sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json", *args], env)
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pulse-check-bench-") as tmp:
        home = Path(tmp)
        cluster = DevCluster.plan(home / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT)
        cluster.up(cache_dir())
        env = {**os.environ, "KAFKA_PULSE_HOME": str(home), "PYTHONPATH": str(REPO)}
        env.pop("KAFKA_PULSE_CONFIG", None)
        try:
            timed([sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json", "--timeout", "60"], env)  # topic
            floor = (
                "import kafka_pulse.cli.main, kafka_pulse.cli.check, kafka_pulse.check.health_check, "
                "kafka_pulse.clusters"
            )
            imports = [timed([sys.executable, "-c", floor], env)[0] for _ in range(args.runs)]
            healthy = check_runs(env, args.runs)
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
            peer = [timed(topics, env)[0] for _ in range(args.runs)]
            hung: tuple[list[float], list[float], list[int]] = ([], [], [])
            for _ in range(args.runs):
                await_healthy(cluster)
                cluster.pause(2)
                try:
                    walls, own, codes = check_runs(env, 1)
                finally:
                    cluster.resume(2)
                hung[0].extend(walls)
                hung[1].extend(own)
                hung[2].extend(codes)
        finally:
            cluster.down()
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; runs per case: {args.runs}")
    print("| case | wall median (s) | wall min-max (s) | own elapsed_s median | own elapsed_s max | exit codes |")
    print("|---|---|---|---|---|---|")
    print(row("healthy", *healthy))
    print(row("broker 2 SIGSTOPped", *hung))
    print(
        f"| start-up and imports of check only (floor) | {statistics.median(imports):.2f} | "
        f"{min(imports):.2f}-{max(imports):.2f} | - | - | - |"
    )
    print(
        f"| peer: kafka-topics --describe --under-replicated-partitions | {statistics.median(peer):.2f} | "
        f"{min(peer):.2f}-{max(peer):.2f} | - | - | - |"
    )
    ratio = statistics.median(healthy[0]) / statistics.median(peer)
    print(f"healthy check / kafka-topics: {ratio:.2f}x")


if __name__ == "__main__":
    main()
