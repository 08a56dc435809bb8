"""Cost of one status-board refresh inside `kafka-pulse lag`: process CPU per refresh, and what the brokers saw
during the refreshes (connections created, Produce requests served), on a 3-broker dev cluster of its own.

Run: python bench/board_bench.py [--refreshes 20] [--partitions N]. Builds `kafka-pulse lag`'s assembly in this
process as the CLI does (`Assembly`, `add_lag`, `add_status`), starts it with the board's own loop stopped, awaits
lag's first HWM round, then measures: lag alone over `--idle-s` seconds (its own loops), and `--refreshes` calls of
the board's `refresh()` back to back; the refreshes' CPU is the process CPU over them minus lag's idle rate over
the same wall time. The brokers' side is read over JMX (`socket-server-metrics` `connection-creation-total`,
`RequestMetrics` Produce `Count`) before and after the refreshes, so a connection or a produce of the board is
seen whoever opened it. With `--partitions N`, N partitions are created first (topics of 10, replication 1; the
brokers' heap grown as `dev up --profile large` grows it).
The same script runs against any tree (PYTHONPATH), so the figures before and after a change come from one command.
Jars must already be cached (`kafka-pulse dev fetch`).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import cast

from confluent_kafka.admin import AdminClient, NewTopic

from collectors.catalogue import BeanQuery
from collectors.transport import JpypeTransport
from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config
from kafka_pulse.runner.assembly import Assembly, add_lag, add_status
from kafka_pulse.status.board import StatusBoard
from lag import LagRunner
from pulse.config import ClusterConfig, PulseConfig
from pulse.paths import cache_dir
from pulse.ports import LOOPBACK, free_ports, wait_until

CONNECTIONS = BeanQuery(
    "kafka.server:type=socket-server-metrics,listener=*,networkProcessor=*", ("connection-creation-total",)
)
PRODUCES = BeanQuery("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=*", ("Count",))


def broker_counts(cluster: ClusterConfig) -> tuple[float, float]:
    """Connections created on every listener and Produce requests served, summed over the brokers."""
    assert cluster.jmx is not None
    connections = produces = 0.0
    for broker in cluster.jmx.brokers:
        jmx = JpypeTransport(broker, 20)
        try:
            readings = jmx.read([CONNECTIONS, PRODUCES])
        finally:
            jmx.close()
        for r in readings:
            if "socket-server-metrics" in r.bean and "CONTROLLER" not in r.bean:
                connections += float(r.value)
            elif "request=Produce" in r.bean:
                produces += float(r.value)
    return connections, produces


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--refreshes", type=int, default=20)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--partitions", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pulse-board-bench-") as tmp:
        home = Path(tmp)
        os.environ["KAFKA_PULSE_HOME"] = str(home)
        heap = max(512, 412 + args.partitions // 3 // 10)  # devstack's DataShape.heap_mb: 0.1 MB a replica
        jvm = {n: [f"-Xms{heap // 2}m", f"-Xmx{heap}m"] for n in (1, 2, 3)}
        dev = DevCluster.plan(home / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT, extra_jvm_flags=jvm)
        dev.up(cache_dir(), timeout_s=300)
        try:
            cluster = dev_cluster_config(dev)
            if args.partitions:
                admin = AdminClient({"bootstrap.servers": dev.spec.bootstrap_servers})
                # 10 partitions a topic, 100 topics a request: KRaft refuses one request of 10,000 partitions
                # (POLICY_VIOLATION, "excessively large batch operation").
                sizes = [min(10, args.partitions - at) for at in range(0, args.partitions, 10)]
                topics = [NewTopic(f"board-bench-{i}", n, 1) for i, n in enumerate(sizes)]
                for at in range(0, len(topics), 100):
                    for future in admin.create_topics(topics[at : at + 100]).values():
                        future.result(300)
            run(cluster, home, args)
        finally:
            dev.down()


def run(cluster: ClusterConfig, home: Path, args: argparse.Namespace) -> None:
    config = PulseConfig.model_validate({"clusters": [cluster.model_dump(mode="json")]})
    (port,) = free_ports(1)
    assembly = Assembly(config.http, f"{LOOPBACK}:{port}", "--listen")
    add_lag(assembly, config, [cluster], None, home / "state")
    add_status(assembly, config, [cluster], {"canary": "not run", "slo": "not run"})
    board = cast(StatusBoard, next(p.service for p in assembly.parts.parts if p.name == "status"))
    lag = cast(LagRunner, next(p.service for p in assembly.parts.parts if p.name == "lag"))
    board.start = lambda: None  # type: ignore[method-assign]  # measured by calling refresh() here, not its loop
    assembly.start()
    try:
        if not wait_until(lambda: lag.service.ready, 120, 0.2):
            raise SystemExit("lag did not finish its first rounds within 120 s")
        board.refresh()  # warm: imports, first clients
        started_cpu, started = cpu_s(), time.monotonic()
        time.sleep(args.idle_s)
        idle_rate = (cpu_s() - started_cpu) / (time.monotonic() - started)
        connections, produces = broker_counts(cluster)
        rss_before = rss_mb()
        started_cpu, started = cpu_s(), time.monotonic()
        for _ in range(args.refreshes):
            board.refresh()
        wall = time.monotonic() - started
        spent = cpu_s() - started_cpu - idle_rate * wall
        connections_after, produces_after = broker_counts(cluster)
        doc = board.document()
        statuses = {s["name"]: s["status"] for s in doc["clusters"][0]["checks"]}
    finally:
        assembly.stop()
    load = os.getloadavg()
    partitions = args.partitions or "a few"
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; 3 brokers, {partitions} partitions")
    print(f"lag alone: {idle_rate * 100:.2f} % of a core over {args.idle_s:g} s")
    print(
        "| refreshes | wall per refresh (ms) | CPU per refresh (ms) | connections created | Produce requests |", end=""
    )
    print(" RSS (MB) |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {args.refreshes} | {wall / args.refreshes * 1000:.1f} | {spent / args.refreshes * 1000:.1f} | "
        f"{connections_after - connections:.0f} | {produces_after - produces:.0f} | "
        f"{rss_before:.0f} -> {rss_mb():.0f} |"
    )
    print(f"sections: {statuses}")


if __name__ == "__main__":
    main()
