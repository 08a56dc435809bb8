"""One full JMX scrape of one broker: jmxquery, jpype and the jmx_exporter 1.0.1 agent, side by side.

Run: python bench/jmx_bench.py [--runs 15] [--warmup 3] [--brokers 3] [--topics 10] [--cycles 20] [--cycle-s 2]

Starts its own dev cluster with `io.prometheus.jmx:jmx_prometheus_javaagent:1.0.1` (Maven Central, copied into the
cache by Maven) attached to node 1 with Strimzi's Kafka rules (bench/jmx_exporter_kafka_rules.yaml), creates some
topics with traffic, then scrapes node 1 in rounds, the three ways in rotating order:

- jmxquery, jpype: what a `BrokerScraper` does per scrape: `transport.read(plan)` + `map_readings`, for the plan the
  collector reads by default (broker-wide beans, no per-topic ones). jpype is measured in its steady state on one
  kept connection; its first connect (in-process JVM start, then connect + first scrape) is reported apart.
- jmx_exporter: `GET /metrics` from the agent inside the broker.

Then the collector as `collect` runs it (`--cycles`, 0 to skip): a `CollectorService` (jpype) over every broker
of the cluster, one scrape cycle every `--cycle-s`: this process's CPU per cycle (every broker's scrape thread, the
cluster-state read, the in-process JVM) and per broker, the cluster-state read alone, and the CPU of rendering
/metrics per broker: the figures a capacity model needs for how many brokers one `collectors.shard` can take.

Wall time is the scrape's. CPU is counted where the work happens: this process (all its threads, the in-process JVM
included) plus its reaped children (the JVM jmxquery forks per call, via RUSAGE_CHILDREN), and the broker JVM,
whose CPU clock (the counter /proc/PID/stat shows in ticks, read at ns resolution) rises both for answering RMI and
for running the agent. The broker's idle CPU rate, measured before the rounds, is subtracted from its delta.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import CollectorRegistry, generate_latest

from collectors.catalogue import scrape_plan
from collectors.mapping import BrokerIdentity, map_readings
from collectors.scrapers import PeriodicScraper, ScrapeResult
from collectors.service import CollectorService, topic_selection
from collectors.transport import JmxqueryTransport, JpypeTransport, ensure_jvm
from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION, DEPENDENCY_PLUGIN
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CollectorsConfig
from pulse.paths import cache_dir
from pulse.ports import free_ports

AGENT = "io.prometheus.jmx:jmx_prometheus_javaagent:1.0.1"
RULES = Path(__file__).with_name("jmx_exporter_kafka_rules.yaml")
BROKER = 1
TARGET_RATIO = 2.0
"""The target: the fast transport within 2x of jmx_exporter's scrape time."""


def fetch_agent(cache: Path) -> Path:
    """The agent jar, copied from Maven Central into the cache once."""
    _group, artifact, version = AGENT.split(":")
    directory = cache / "jmx_exporter" / version
    jar = directory / f"{artifact}-{version}.jar"
    if not jar.exists():
        argv = ["mvn", "-B", "-q", f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={AGENT}", f"-DoutputDirectory={directory}"]
        subprocess.run(argv, check=True, capture_output=True, timeout=600)
    return jar


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads, dead ones included) of another process: its POSIX CPU clock."""
    return time.clock_gettime(((~pid) << 3) | 2)  # CPUCLOCK_SCHED of the whole thread group, see clock_getcpuclockid


def proc_stat_cpu_s(pid: int) -> float:
    """The same figure from /proc/PID/stat (utime + stime), in clock ticks; a cross-check of the clock above."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """This process's CPU (every thread, the JPype JVM's included) plus that of its reaped children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@dataclass
class Samples:
    wall_s: list[float] = field(default_factory=list)
    scraper_cpu_s: list[float] = field(default_factory=list)
    broker_cpu_s: list[float] = field(default_factory=list)
    """Net of the broker's idle rate over the same wall time."""
    size: int = 0
    """Readings (transports) or sample lines (jmx_exporter) of the last scrape."""


def measure(scrape: Callable[[], int], broker_pid: int, idle_rate: float, into: Samples) -> None:
    broker0, own0, wall0 = process_cpu_s(broker_pid), own_cpu_s(), time.perf_counter()
    into.size = scrape()
    wall = time.perf_counter() - wall0
    own, broker = own_cpu_s() - own0, process_cpu_s(broker_pid) - broker0
    into.wall_s.append(wall)
    into.scraper_cpu_s.append(own)
    into.broker_cpu_s.append(max(0.0, broker - idle_rate * wall))


def start_cluster(home: Path, brokers: int, agent: Path, port: int, full_jit: bool) -> DevCluster:
    flags = {BROKER: [f"-javaagent:{agent}=127.0.0.1:{port}:{RULES}"]}
    if full_jit:
        flags[BROKER].append("-XX:TieredStopAtLevel=4")
    cluster = DevCluster.plan(home, brokers, DEFAULT_VERSION, Security.PLAINTEXT, extra_jvm_flags=flags)
    cluster.up(cache_dir())
    return cluster


def add_traffic(cluster: DevCluster, topics: int) -> None:
    """Topics with a few thousand records and a committed group, so the request and topic beans exist."""
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap_servers})
    names = [f"bench-{i}" for i in range(topics)]
    rf = cluster.spec.replication_factor
    for future in admin.create_topics([NewTopic(n, 3, rf) for n in names]).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": cluster.spec.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for name in names:
        for i in range(300):
            producer.produce(name, value=b"x" * 200, key=str(i).encode())
    if producer.flush(60) != 0:
        raise RuntimeError("records were not delivered")


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="measured rounds (each scrapes all three ways)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured rounds first (JIT, caches)")
    parser.add_argument("--brokers", type=int, default=3, choices=(1, 3))
    parser.add_argument("--topics", type=int, default=10, help="topics of 3 partitions created, with traffic")
    parser.add_argument(
        "--full-jit",
        action="store_true",
        help="run the broker with C2 as in production (the dev cluster stops at C1 for a fast start)",
    )
    parser.add_argument("--profile", type=Path, help="after the rounds, cProfile jpype's read in this thread")
    parser.add_argument("--cycles", type=int, default=20, help="collector cycles measured after the rounds (0: none)")
    parser.add_argument("--cycle-s", type=float, default=2.0, help="the collector's scrape_interval_s for them")
    parser.add_argument(
        "--fan-out",
        type=int,
        default=1,
        help="list each broker's JMX endpoint this many times (ids b*1000+k) so one collector holds more scrapers",
    )
    args = parser.parse_args()

    agent = fetch_agent(cache_dir())
    (agent_port,) = free_ports(1)
    home = Path(tempfile.mkdtemp(prefix="pulse-jmx-bench-"))
    cluster = start_cluster(home / "dev", args.brokers, agent, agent_port, args.full_jit)
    try:
        add_traffic(cluster, args.topics)
        run(cluster, agent_port, args)
        if args.cycles > 0:
            run_collector(cluster, args.cycles, args.cycle_s, args.fan_out)
    finally:
        cluster.down()
        shutil.rmtree(home, ignore_errors=True)


def run(cluster: DevCluster, agent_port: int, args: argparse.Namespace) -> None:
    config = dev_cluster_config(cluster)
    assert config.jmx is not None
    broker = next(b for b in config.jmx.brokers if b.broker_id == BROKER)
    broker_pid = cluster.pids[BROKER]
    plan = scrape_plan(topic_selection(CollectorsConfig()))
    identity = BrokerIdentity("dev", BROKER, cluster.node(BROKER).rack)
    jit = "C2 (full tiered)" if args.full_jit else "C1 only (dev cluster default)"
    print(f"load average before: {os.getloadavg()[0]:.2f}; plan: {len(plan)} queries; broker JIT: {jit}", flush=True)

    # jpype's first connect: the in-process JVM, then connect + first scrape.
    cpu0, wall0 = own_cpu_s(), time.perf_counter()
    ensure_jvm(30)
    jvm_start = (time.perf_counter() - wall0, own_cpu_s() - cpu0)
    jpype_transport = JpypeTransport(broker, 30)
    cpu0, wall0 = own_cpu_s(), time.perf_counter()
    map_readings(jpype_transport.read(plan), identity)
    first_connect = (time.perf_counter() - wall0, own_cpu_s() - cpu0)
    jmxquery_transport = JmxqueryTransport(broker, 30)
    client = httpx.Client(timeout=30)
    url = f"http://127.0.0.1:{agent_port}/metrics"

    def scrape_transport(transport: JmxqueryTransport | JpypeTransport) -> Callable[[], int]:
        def scrape() -> int:
            readings = transport.read(plan)
            map_readings(readings, identity)
            return len(readings)

        return scrape

    def scrape_agent() -> int:
        response = client.get(url)
        response.raise_for_status()
        return sum(1 for line in response.text.splitlines() if line and not line.startswith("#"))

    modes: dict[str, Callable[[], int]] = {
        "jmxquery": scrape_transport(jmxquery_transport),
        "jpype": scrape_transport(jpype_transport),
        "jmx_exporter 1.0.1 agent": scrape_agent,
    }
    for _ in range(args.warmup):
        for scrape in modes.values():
            scrape()

    # The broker's idle CPU rate, subtracted from its delta during each scrape.
    idle_window_s = 5.0
    before = process_cpu_s(broker_pid)
    time.sleep(idle_window_s)
    idle_rate = (process_cpu_s(broker_pid) - before) / idle_window_s

    results = {name: Samples() for name in modes}
    stat_before = proc_stat_cpu_s(broker_pid)
    clock_before = process_cpu_s(broker_pid)
    names = list(modes)
    for round_ in range(args.runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:  # rotate, so no way always runs right after another
            measure(modes[name], broker_pid, idle_rate, results[name])
    stat_delta = proc_stat_cpu_s(broker_pid) - stat_before
    clock_delta = process_cpu_s(broker_pid) - clock_before
    if args.profile:
        # `read` waits on the transport's worker thread, which cProfile does not follow: profile its body here.
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.runs):
            jpype_transport._read(list(plan))
        profiler.disable()
        profiler.dump_stats(str(args.profile))
    jpype_transport.close()
    client.close()

    print(f"load average after: {os.getloadavg()[0]:.2f}; broker idle CPU {idle_rate * 1000:.1f} ms/s")
    print(f"broker CPU over the rounds: {clock_delta:.3f} s by its CPU clock, {stat_delta:.2f} s by /proc/PID/stat")
    print()
    print(
        "| way | wall median (ms) | wall min-max (ms) | scraper CPU median (ms) | broker CPU median (ms) "
        "| total CPU median (ms) | values per scrape |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, s in results.items():
        total = [a + b for a, b in zip(s.scraper_cpu_s, s.broker_cpu_s, strict=True)]
        print(
            f"| {name} | {median_ms(s.wall_s)} | {min(s.wall_s) * 1000:.1f}-{max(s.wall_s) * 1000:.1f} "
            f"| {median_ms(s.scraper_cpu_s)} | {median_ms(s.broker_cpu_s)} | {median_ms(total)} | {s.size} |"
        )
    print()
    print(
        f"jpype first connect: in-process JVM start {jvm_start[0] * 1000:.0f} ms wall / {jvm_start[1] * 1000:.0f} ms "
        f"CPU, then connect + first scrape {first_connect[0] * 1000:.0f} ms wall / {first_connect[1] * 1000:.0f} ms CPU"
    )
    exporter = statistics.median(results["jmx_exporter 1.0.1 agent"].wall_s)
    for name in ("jpype", "jmxquery"):
        ratio = statistics.median(results[name].wall_s) / exporter
        verdict = "within" if ratio <= TARGET_RATIO else "outside"
        print(f"{name} / jmx_exporter wall time: {ratio:.2f}x ({verdict} the {TARGET_RATIO:g}x target)")
    if args.profile:
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(15)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def later_than(mark: float) -> Callable[[ScrapeResult[Any]], bool]:
    return lambda result: result.finished_s > mark


def run_collector(cluster: DevCluster, cycles: int, cycle_s: float, fan_out: int) -> None:
    """`collect`'s own cost per scrape cycle: a CollectorService over every broker, as `collect` builds it; with
    `fan_out` > 1 each broker is listed again under extra ids, each copy its own connection and full scrape."""
    config = dev_cluster_config(cluster)
    assert config.jmx is not None
    copies = [
        b.model_copy(update={"broker_id": b.broker_id * 1000 + k} if k else {})
        for b in config.jmx.brokers
        for k in range(fan_out)
    ]
    config = config.model_copy(update={"jmx": config.jmx.model_copy(update={"brokers": copies})})
    registry = CollectorRegistry()
    rss0 = rss_mib()
    service = CollectorService([config], CollectorsConfig(transport="jpype", scrape_interval_s=cycle_s))
    service.register(registry)
    service.start()
    try:
        scrapers: list[PeriodicScraper[Any]] = [*service.brokers.values(), *service.admin_scrapers()]
        for scraper in scrapers:
            scraper.wait_for(lambda r: r.ok, 60)

        def next_cycle() -> None:
            """Block (this thread idles) until every scraper has published one more result."""
            marks = [scraper.result.finished_s for scraper in scrapers if scraper.result is not None]
            for scraper, mark in zip(scrapers, marks, strict=True):
                scraper.wait_for(later_than(mark), cycle_s * 10)

        next_cycle()  # warm-up cycle
        cpu0, wall0 = own_cpu_s(), time.perf_counter()
        for _ in range(cycles):
            next_cycle()
        cycle_cpu = (own_cpu_s() - cpu0) / cycles
        wall = (time.perf_counter() - wall0) / cycles
        failed = sum(not s.result.ok for s in scrapers if s.result is not None)
        rss = rss_mib() - rss0
        # The cluster-state read alone (already inside each cycle), here on this thread.
        (state,) = service.states.values()
        cpu0 = own_cpu_s()
        for _ in range(5):
            state.scrape_once()
        state_cpu = (own_cpu_s() - cpu0) / 5
        cpu0 = own_cpu_s()
        size = 0
        for _ in range(10):
            size = len(generate_latest(registry))
        render_cpu = (own_cpu_s() - cpu0) / 10
    finally:
        service.stop()
    brokers = len(service.brokers)
    per_broker = (cycle_cpu - state_cpu) / brokers
    print()
    load = os.getloadavg()[0]
    print(
        f"collector (jpype, {brokers} brokers, one cycle every {cycle_s:g} s, {cycles} cycles, "
        f"wall {wall:.2f} s/cycle, {failed} failed scrapes at the end; load average {load:.2f})"
    )
    print("| figure | CPU (ms) |")
    print("|---|---|")
    print(f"| one cycle, whole process ({brokers} brokers + cluster state) | {cycle_cpu * 1000:.1f} |")
    print(
        f"| cluster-state read ({len(state.result.value.balance) if state.result and state.result.value else 0} "
        f"brokers) | {state_cpu * 1000:.1f} |"
    )
    print(f"| per broker per cycle (cycle - cluster state) / brokers | {per_broker * 1000:.1f} |")
    print(f"| /metrics render, whole ({size / 1024:.0f} KiB) | {render_cpu * 1000:.1f} |")
    print(f"| /metrics render per broker | {render_cpu / brokers * 1000:.1f} |")
    print(
        f"RSS added by the service (connections, scrapers, families): {rss:.1f} MiB, {rss / brokers:.2f} MiB per "
        f"broker; process RSS {rss_mib():.0f} MiB (the in-process JVM included)"
    )
    every = 15.0
    print(f"one core at a scrape every {every:g} s: about {every / (per_broker + render_cpu / brokers):.0f} brokers")


if __name__ == "__main__":
    main()
