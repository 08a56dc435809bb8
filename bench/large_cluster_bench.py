"""A large real cluster on this machine: 3 brokers, 10,000 partitions over 1,000 topics (replication 3) and 1,000
committing consumer groups (`kafka-pulse dev up --profile large`'s shape), and every component measured on it
beside Kafka's own tools and Debian's Burrow 1.2.1.

Run: python bench/large_cluster_bench.py --phase main   [--topics 1000 --partitions-per-topic 10 --groups 1000]
     python bench/large_cluster_bench.py --phase burrow [same shape options]
     python bench/large_cluster_bench.py --phase main --steps audit,reads,stream   (costs: bench/large_cluster_costs.py)
     python bench/large_cluster_bench.py --phase main --steps groups --share-groups 10,100 --streams-groups 5
         (real share and streams groups over the shape's topics, then their reads: bench/large_cluster_groups.py)
     python bench/large_cluster_bench.py --phase costs --bootstrap HOST:PORT --steps audit,reads,stream (a held cluster)

`main` (Kafka 4.x): the canary on the empty cluster first (probe latency p50/p99 from its histograms, the topic
planner's reconcile time), then the shape is created (timed), then: Kafka's `kafka-consumer-groups --describe
--all-groups` and `kafka-topics --describe --under-replicated-partitions` (wall and CPU of the JVM); the cluster-state
read of `collect` in this process (`fetch_snapshot` + `assess`), and `kafka-pulse collect` as a child process
(/metrics scrape time, bytes, series); `kafka-pulse lag` (time until every group's every partition is served, CPU
per commit while every group commits every few seconds, /metrics scrape time, bytes, series); `kafka-pulse check`
(wall); the canary again on the large cluster. `burrow` (Kafka 3.9, which Burrow 1.2.1 can read): Burrow and
`kafka-pulse lag` (burrow-1.2 rules) started together on the same filled cluster: time until each serves every
group with all its partitions, then CPU and RSS of each over the same committing interval.
CPU is utime + stime from /proc/PID/stat (children: getrusage), RSS from /proc/PID/status. The host is shared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.admin import AdminClient
from figures import FigureLog
from large_cluster_costs import audit_step, group_reads_step, stream_step
from large_cluster_groups import groups_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the Burrow and ZooKeeper launchers live in tests/

from large_cluster_support import (
    CLUSTER,
    RECORDS,
    REPO,
    Child,
    Committer,
    NoReassign,
    all_served,
    backlog_read,
    children_cpu,
    cpu_seconds,
    delta_quantiles,
    env_for,
    family_counts,
    jmx_successes,
    offset_commit_records,
    rss_mb,
    run_tool,
    say,
    scrape,
)

from canary.topic import TopicManager
from devstack.cluster import DevCluster
from devstack.populate import fill
from devstack.runtime import DEFAULT_VERSION, LEGACY_VERSION, ensure_tools
from devstack.topology import DataShape, Security
from pulse.config import CanaryConfig
from pulse.paths import cache_dir
from pulse.ports import free_ports, wait_until


def canary_round(home: Path, cluster: DevCluster, seconds: float, tag: str) -> dict[str, Any]:
    """The canary for `seconds` (probe latencies from its own histograms), then the topic planner timed here."""
    port = free_ports(1)[0]
    config = {
        "clusters": [cluster_entry(cluster)],
        "canary": {
            "listen": f"127.0.0.1:{port}",
            "interval_s": 0.25,
            "topic": f"__pulse_canary_{tag}",
            "sli_log": {"enabled": False},
        },
    }
    child = Child(home, "canary", config)
    http = httpx.Client(timeout=60, trust_env=False)
    url = f"http://127.0.0.1:{port}"
    try:

        def answering() -> bool:
            try:
                return "kafka_pulse_canary_e2e_latency_seconds_bucket" in http.get(f"{url}/metrics").text
            except httpx.HTTPError:
                return False

        assert wait_until(answering, 180, 1.0), child.log_path.read_text()[-2000:]
        before = http.get(f"{url}/metrics").text
        cpu0 = cpu_seconds(child.pid)
        time.sleep(seconds)  # the canary probes at its own interval; this is the measured stretch
        cpu = cpu_seconds(child.pid) - cpu0
        after = http.get(f"{url}/metrics").text
        rss = rss_mb(child.pid)
    finally:
        child.stop()
    e2e = delta_quantiles(before, after, "kafka_pulse_canary_e2e_latency_seconds")
    produce = delta_quantiles(before, after, "kafka_pulse_canary_produce_latency_seconds")
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap_servers, "log_level": 0})
    manager = TopicManager(admin, NoReassign(), CanaryConfig(topic=f"__pulse_canary_{tag}"), timeout_s=60)
    planner = []
    for _ in range(5):
        w0, c0 = time.monotonic(), time.process_time()
        report = manager.reconcile(time.monotonic())
        planner.append((time.monotonic() - w0, time.process_time() - c0, report.error))
    series = sum(family_counts(after).values())
    return {
        "e2e": e2e,
        "produce": produce,
        "canary_cpu_s": cpu,
        "seconds": seconds,
        "planner": planner,
        "rss_mb": rss,
        "series": series,
    }


def cluster_entry(cluster: DevCluster) -> dict[str, Any]:
    brokers = [{"broker_id": n.node_id, "port": n.jmx_port} for n in cluster.spec.nodes]
    return {"name": CLUSTER, "bootstrap_servers": cluster.spec.bootstrap_servers, "jmx": {"brokers": brokers}}


def lag_config(
    cluster: DevCluster, port: int, mode: str = "enhanced", granularity: str = "partition"
) -> dict[str, Any]:
    lag = {"mode": mode, "listen": f"127.0.0.1:{port}", "group_deny": "^(console-consumer-|__pulse)"}
    return {
        "clusters": [{"name": CLUSTER, "bootstrap_servers": cluster.spec.bootstrap_servers}],
        "lag": lag | {"metrics_granularity": granularity},
    }


def start_cluster(home: Path, version: str, shape: DataShape) -> DevCluster:
    heap = shape.heap_mb(3)
    jvm = {n: [f"-Xms{heap // 2}m", f"-Xmx{heap}m"] for n in (1, 2, 3)}
    cluster = DevCluster.plan(home / "dev", 3, version, Security.PLAINTEXT, extra_jvm_flags=jvm)
    cluster.up(cache_dir(), timeout_s=300)
    say(f"Kafka {version}: 3 brokers up, heap {heap} MB each")
    return cluster


def fill_timed(cluster: DevCluster, shape: DataShape) -> dict[str, float]:
    t0, c0 = time.monotonic(), time.process_time()
    fill(
        cluster.spec.bootstrap_servers,
        shape,
        3,
        RECORDS,
        progress=lambda m: None if "0/" in m and "00/" not in m else say(m),
    )
    took = {"fill_wall_s": time.monotonic() - t0, "fill_harness_cpu_s": time.process_time() - c0}
    say(
        f"shape created: {shape.topics} topics, {shape.partitions} partitions, {shape.groups} groups "
        f"in {took['fill_wall_s']:.0f} s"
    )
    return took


def phase_main(home: Path, shape: DataShape, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"kafka_version": DEFAULT_VERSION}
    cluster = start_cluster(home, DEFAULT_VERSION, shape)
    env = env_for(home)
    http = httpx.Client(timeout=300, trust_env=False)
    try:
        out["canary_small"] = canary_round(home, cluster, args.canary_seconds, "small")
        say(f"canary on the empty cluster: {out['canary_small']}")
        out["fill"] = fill_timed(cluster, shape)
        brokers = {
            n.node_id: {"rss_mb": rss_mb(pid)} for n, pid in ((n, cluster.pids[n.node_id]) for n in cluster.spec.nodes)
        }
        out["broker_rss_after_fill"] = brokers
        bootstrap = cluster.spec.bootstrap_servers
        if args.hold is not None:  # another process works on the filled cluster until the file is deleted
            args.hold.write_text(bootstrap)
            say(f"holding: cluster at {bootstrap} until {args.hold} is deleted")
            wait_until(lambda: not args.hold.exists(), 7200, 2.0)
        steps = set(args.steps.split(","))
        tools = ensure_tools(DEFAULT_VERSION, cache_dir())
        base = ["java", "-cp", tools.classpath]
        groups_cmd = [
            *base,
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--all-groups",
        ]
        topics_cmd = [
            *base,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--under-replicated-partitions",
        ]
        if "tools" in steps:
            out["kafka_consumer_groups"] = [run_tool(groups_cmd, env) for _ in range(args.tool_runs)]
            say(f"kafka-consumer-groups --describe --all-groups: {out['kafka_consumer_groups']}")
            out["kafka_topics_urp"] = [run_tool(topics_cmd, env) for _ in range(args.tool_runs)]
            say(f"kafka-topics --describe --under-replicated-partitions: {out['kafka_topics_urp']}")

        # Imported here, not at the top: the shape takes half an hour to build, and the read measured is the code
        # in the tree when it runs (the child commands below start from the tree too).
        from collectors.cluster_state import assess, fetch_snapshot

        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        state = []
        for _ in range(3):
            w0, c0 = time.monotonic(), time.process_time()
            snapshot = fetch_snapshot(admin, CLUSTER, 120)
            health = assess(snapshot, [1, 2, 3])
            state.append((time.monotonic() - w0, time.process_time() - c0, len(snapshot.partitions)))
        out["cluster_state_read"] = state
        say(f"cluster state read (fetch_snapshot + assess): {state}; health {type(health).__name__}")

        if "collect" in steps:
            out |= collect_round(home, cluster, http, args)
        if "lag" in steps:
            out["lag"] = lag_round(home, cluster, shape, http, args, "enhanced")
            say(f"lag: {out['lag']}")
        if "check" in steps:
            out["check"] = [check_run(env) for _ in range(3)]
            say(f"check: {out['check']}")
        out |= cost_steps(home, bootstrap, shape, args)
        if "canary" in steps:
            out["canary_large"] = canary_round(home, cluster, args.canary_seconds, "large")
            say(f"canary on the large cluster: {out['canary_large']}")
        out["broker_rss_end"] = {n.node_id: rss_mb(cluster.pids[n.node_id]) for n in cluster.spec.nodes}
        out["broker_cpu_total_s"] = {n.node_id: cpu_seconds(cluster.pids[n.node_id]) for n in cluster.spec.nodes}
    finally:
        cluster.down()
    return out


def cost_steps(home: Path, bootstrap: str, shape: DataShape, args: argparse.Namespace) -> dict[str, Any]:
    """The cost steps (bench/large_cluster_costs.py) `--steps` names, on the cluster at `bootstrap`."""
    steps, out = set(args.steps.split(",")), {}
    if "audit" in steps:  # issue 26: the broker-side audit's requests per cycle
        counts = [int(n) for n in args.audit_groups.split(",")]
        out["audit"] = audit_step(bootstrap, shape, counts, args.audit_cycles)
    if "reads" in steps:  # issue 24: share/streams group reads and DescribeTopicPartitions
        out["reads"] = group_reads_step(bootstrap, shape, args.read_runs)
    if "groups" in steps:  # issue 24: the same reads against real share and streams groups
        counts = [int(n) for n in args.share_groups.split(",") if n]
        out["groups"] = groups_step(
            bootstrap, shape, counts, args.streams_groups, args.read_runs, home, args.group_batch, args.group_wait
        )
    if "stream" in steps:  # issue 26: the reconciliation stream's throughput (needs no cluster)
        masters = args.stream_masters.split(",")
        out["stream"] = stream_step(args.stream_rows, args.stream_topics, 2, masters, home / "stream")
    return out


def phase_costs(home: Path, shape: DataShape, args: argparse.Namespace) -> dict[str, Any]:
    """The cost steps on a cluster of `shape` another run holds (`--phase main --steps none --hold FILE`)."""
    return {"bootstrap": args.bootstrap} | cost_steps(home, args.bootstrap, shape, args)


def collect_round(home: Path, cluster: DevCluster, http: httpx.Client, args: argparse.Namespace) -> dict[str, Any]:
    """`kafka-pulse collect` as a child: its cluster state awaited, CPU over `steady_seconds`, then scrapes."""
    out: dict[str, Any] = {}
    port = free_ports(1)[0]
    collect = Child(home, "collect", {"clusters": [cluster_entry(cluster)], "http": {"listen": f"127.0.0.1:{port}"}})
    curl = f"http://127.0.0.1:{port}"
    try:

        def has_state() -> bool:
            try:
                return f'kafka_pulse_cluster_partitions{{cluster="{CLUSTER}"}}' in http.get(f"{curl}/metrics").text
            except httpx.HTTPError:
                return False

        if not wait_until(has_state, 300, 1.0):
            say(f"collect: no cluster state within 300 s: {collect.log_path.read_text()[-3000:]}")
        cpu0 = cpu_seconds(collect.pid)
        time.sleep(args.steady_seconds)  # collect's own 15 s cycles run in this stretch
        out["collect_cpu_per_s"] = (cpu_seconds(collect.pid) - cpu0) / args.steady_seconds
        out["collect_scrape"] = scrape(http, curl)
        out["collect_rss_mb"] = rss_mb(collect.pid)
        text = http.get(f"{curl}/metrics").text
        out["collect_cluster_lines"] = [
            line
            for line in text.splitlines()
            if line.startswith(("kafka_pulse_cluster_partitions", "kafka_pulse_cluster_state_"))
        ]
    finally:
        collect.stop()
    say(
        f"collect: {out['collect_scrape']}, CPU {out['collect_cpu_per_s']:.3f} cores, "
        f"RSS {out['collect_rss_mb']:.0f} MB; {out['collect_cluster_lines']}"
    )
    return out


def check_run(env: dict[str, str]) -> dict[str, Any]:
    """`kafka-pulse check --json` once: wall and CPU of the child, exit code, its verdict and own elapsed_s."""
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "check", "--json"]
    cpu0, wall0 = children_cpu(), time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
    wall, cpu = time.monotonic() - wall0, children_cpu() - cpu0
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return {"wall_s": wall, "cpu_s": cpu, "exit": done.returncode, "error": done.stderr[-1500:]}
    checks = {c["name"]: (c["status"], c["summary"]) for c in report.get("checks", [])}
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "exit": done.returncode,
        "status": report.get("status"),
        "elapsed_s": report.get("elapsed_s"),
        "checks": checks,
    }


def lag_round(
    home: Path, cluster: DevCluster, shape: DataShape, http: httpx.Client, args: argparse.Namespace, mode: str
) -> dict[str, Any]:
    """`kafka-pulse lag` from cold: backlog time, then CPU per commit under commit rounds, then scrapes."""
    port = free_ports(1)[0]
    child = Child(home, "lag", lag_config(cluster, port, mode))
    url = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {}
    try:
        pending = {g for g, _ in shape.group_topics()}
        # The backlog is read once lag itself says the cluster can be judged and lists every group; asking each
        # group's /lag (below) then costs the bench's own HTTP round trips, a thousand of them.
        if wait_until(backlog_read(http, url, len(pending)), args.lag_wait, 1.0):
            out["backlog_read_s"] = time.monotonic() - child.started
            out["backlog_read_cpu_s"] = cpu_seconds(child.pid)
            say(f"lag: backlog read {out['backlog_read_s']:.1f} s, CPU {out['backlog_read_cpu_s']:.1f} s")
        if not wait_until(all_served(http, url, shape, pending), args.lag_wait, 2.0):
            if child.proc.poll() is not None:  # died: its log's end says how (a native abort leaves one line)
                tail = child.log_path.read_text(errors="replace")[-1500:]
                say(f"lag exited {child.proc.returncode} with {len(pending)} groups not served: {tail}")
                return {"error": f"exited {child.proc.returncode}", "log_tail": tail}
            text = http.get(f"{url}/metrics").text
            up = [line for line in text.splitlines() if line.startswith("kafka_pulse_lag_source_up")]
            say(f"lag: {len(pending)} groups not served within {args.lag_wait:.0f} s; {up}")
            return {"error": f"{len(pending)} groups not served", "source_up": up, "rss_mb": rss_mb(child.pid)}
        out["backlog_s"] = time.monotonic() - child.started
        out["backlog_cpu_s"] = cpu_seconds(child.pid)
        c0 = cpu_seconds(child.pid)
        time.sleep(args.steady_seconds)
        idle = (cpu_seconds(child.pid) - c0) / args.steady_seconds
        committer = Committer(cluster.spec.bootstrap_servers, shape, args.commit_every)
        r0 = offset_commit_records(http, url)
        c0, w0 = cpu_seconds(child.pid), time.monotonic()
        with committer.running():
            time.sleep(args.steady_seconds)
        wall = time.monotonic() - w0
        loaded = cpu_seconds(child.pid) - c0
        read = offset_commit_records(http, url) - r0
        out |= {
            "idle_cores": idle,
            "loaded_cores": loaded / wall,
            "records_read": read,
            "commits_sent": committer.commits,  # every group's 10 partitions a round, over COMMIT_CLIENTS clients
            "commit_rounds": committer.rounds,
            "records_per_s": read / wall,
            "us_per_commit": loaded / max(1.0, read) * 1e6,
            "us_per_commit_net": (loaded - idle * wall) / max(1.0, read) * 1e6,
            "rss_mb": rss_mb(child.pid),
            "scrape": scrape(http, url),
        }
    finally:
        child.stop()
    return out


def phase_burrow(home: Path, shape: DataShape, args: argparse.Namespace) -> dict[str, Any]:
    from tests.support.burrow import Burrow, BurrowOptions
    from tests.support.zookeeper import ZooKeeper

    out: dict[str, Any] = {"kafka_version": LEGACY_VERSION}
    cluster = start_cluster(home, LEGACY_VERSION, shape)
    zookeeper = ZooKeeper(home / "zookeeper")
    http = httpx.Client(timeout=300, trust_env=False)
    burrow: Any = None
    ours: Child | None = None
    try:
        zookeeper.start()
        out["fill"] = fill_timed(cluster, shape)
        options = BurrowOptions(
            zookeeper_root_path="/burrow-large", expire_cache_s=10, group_blacklist="^(console-consumer-|__pulse)"
        )
        port = free_ports(1)[0]
        t0 = time.monotonic()
        burrow = Burrow(
            home / "burrow", [zookeeper.address], cluster.spec.bootstrap_servers.split(","), CLUSTER, options
        ).start()
        ours = Child(home, "lag", lag_config(cluster, port, "burrow-1.2"))
        urls = {"burrow-1.2.1": burrow.url, "kafka-pulse lag": f"http://127.0.0.1:{port}"}
        pids = {"burrow-1.2.1": burrow.pid, "kafka-pulse lag": ours.pid}
        pending = {name: {g for g, _ in shape.group_topics()} for name in urls}
        checks = {name: all_served(http, urls[name], shape, pending[name]) for name in urls}
        served: dict[str, dict[str, float]] = {}

        def both() -> bool:
            for name, check in checks.items():
                if name not in served and check():
                    served[name] = {
                        "s": time.monotonic() - t0,
                        "cpu_s": cpu_seconds(pids[name]),
                        "rss_mb": rss_mb(pids[name]),
                    }
                    say(f"{name} serves every group: {served[name]}")
            return len(served) == len(checks)

        assert wait_until(both, 1800, 2.0), f"not every group served: {[len(p) for p in pending.values()]}"
        out["first_served"] = served
        c0 = {n: cpu_seconds(p) for n, p in pids.items()}
        w0 = time.monotonic()
        time.sleep(args.steady_seconds)
        idle_wall = time.monotonic() - w0
        out["idle"] = {n: (cpu_seconds(p) - c0[n]) / idle_wall for n, p in pids.items()}
        out["idle_rss_mb"] = {n: rss_mb(p) for n, p in pids.items()}
        say(f"idle: {out['idle']}")
        committer = Committer(cluster.spec.bootstrap_servers, shape, args.commit_every)
        r0 = offset_commit_records(http, urls["kafka-pulse lag"])
        c0 = {n: cpu_seconds(p) for n, p in pids.items()}
        w0 = time.monotonic()
        with committer.running():
            time.sleep(args.steady_seconds)
        wall = time.monotonic() - w0
        read = max(1.0, offset_commit_records(http, urls["kafka-pulse lag"]) - r0)
        out["steady"] = {
            name: {
                "cores": (cpu_seconds(pid) - c0[name]) / wall,
                "us_per_commit": (cpu_seconds(pid) - c0[name]) / read * 1e6,
                "rss_mb": rss_mb(pid),
            }
            for name, pid in pids.items()
        }
        out["commits_per_s"] = read / wall
        out["commits_sent"], out["commit_rounds"] = committer.commits, committer.rounds
        say(f"steady: {out['steady']} at {out['commits_per_s']:.0f} commit records/s (read by kafka-pulse lag)")
    finally:
        if ours is not None:
            ours.stop()
        if burrow is not None:
            burrow.stop()
        zookeeper.stop()
        cluster.down()
    return out


def phase_series(home: Path, shape: DataShape, args: argparse.Namespace) -> dict[str, Any]:
    """Series per broker, topic, partition and group: `collect` with each `topic_metrics` setting and `lag` with
    each `metrics_granularity`, on one filled cluster; the differences divided by what was added."""
    out: dict[str, Any] = {"kafka_version": DEFAULT_VERSION, "shape": str(shape)}
    cluster = start_cluster(home, DEFAULT_VERSION, shape)
    http = httpx.Client(timeout=300, trust_env=False)
    try:
        out["fill"] = fill_timed(cluster, shape)
        for setting in args.topic_metrics.split(","):
            port = free_ports(1)[0]
            config = {
                "clusters": [cluster_entry(cluster)],
                "http": {"listen": f"127.0.0.1:{port}"},
                "collectors": {"topic_metrics": setting},
            }
            child = Child(home, "collect", config)
            url = f"http://127.0.0.1:{port}"
            try:

                def scraped(url: str = url) -> bool:
                    try:
                        text = http.get(f"{url}/metrics").text
                    except httpx.HTTPError:
                        return False
                    return "kafka_pulse_cluster_partitions{" in text and "kafka_server_" in text

                if not wait_until(scraped, args.collect_wait, 2.0):
                    say(f"collect topic_metrics={setting}: no broker samples within {args.collect_wait:.0f} s")
                    out[f"collect_{setting}"] = {"error": f"no broker samples within {args.collect_wait:.0f} s"}
                    continue
                first = http.get(f"{url}/metrics").text
                # A second JMX round, so every broker's beans are in: every broker's last success after the first's.
                seen = max(jmx_successes(first), default=0.0)

                def next_round(url: str = url, seen: float = seen) -> bool:
                    return min(jmx_successes(http.get(f"{url}/metrics").text), default=0.0) > seen

                wait_until(next_round, 120, 1.0)
                text = http.get(f"{url}/metrics").text
            finally:
                child.stop()
            out[f"collect_{setting}"] = {"series": sum(family_counts(text).values()), "bytes": len(text.encode())}
            out[f"collect_{setting}_families"] = family_counts(text)
            say(f"collect topic_metrics={setting}: {out[f'collect_{setting}']}")
        out["canary"] = canary_round(home, cluster, args.canary_seconds, "series")
        say(f"canary: {out['canary']}")
        for granularity in ("partition", "group"):
            port = free_ports(1)[0]
            config = lag_config(cluster, port, granularity=granularity)
            child = Child(home, "lag", config)
            url = f"http://127.0.0.1:{port}"
            try:
                pending = {g for g, _ in shape.group_topics()}
                assert wait_until(all_served(http, url, shape, pending), 600, 2.0), f"{len(pending)} not served"
                text = http.get(f"{url}/metrics").text
            finally:
                child.stop()
            out[f"lag_{granularity}"] = {"series": sum(family_counts(text).values()), "bytes": len(text.encode())}
            out[f"lag_{granularity}_families"] = family_counts(text)
            say(f"lag metrics_granularity={granularity}: {out[f'lag_{granularity}']}")
    finally:
        cluster.down()
    return out


def figures_of(result: dict[str, Any], shape: DataShape) -> FigureLog:
    """The main phase's figures for bench/compare.py: what it measured of the steps that ran."""
    record, at = FigureLog("large_cluster_bench"), f"{shape.topics * shape.partitions_per_topic} partitions"

    def cpu(runs: list[Any] | None) -> float | None:
        return statistics.median(r[1] for r in runs) if runs else None

    if "cluster_state_read" in result:
        ours = statistics.median(r[1] for r in result["cluster_state_read"])
        record.add("large.cluster_state_cpu", at, ours, "s", peer=cpu(result.get("kafka_topics_urp")))
    lag = result.get("lag") or {}
    if "backlog_cpu_s" in lag:
        peer = cpu(result.get("kafka_consumer_groups"))
        record.add("large.lag_cold_cpu", f"{at}, {shape.groups} groups", lag["backlog_cpu_s"], "s", peer=peer)
    if "rss_mb" in lag and "idle_cores" in lag:
        record.add("large.lag_rss", f"{at}, {shape.groups} groups", lag["rss_mb"], "MB")
        record.add("large.lag_idle_cpu", f"{at}, {shape.groups} groups", 100 * lag["idle_cores"], "% of a core")
    if result.get("check"):
        record.add("large.check_wall", at, statistics.median(c["wall_s"] for c in result["check"]), "s")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--phase", choices=("main", "burrow", "series", "costs"), required=True)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions-per-topic", type=int, default=10)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--canary-seconds", type=float, default=60.0)
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    parser.add_argument("--commit-every", type=float, default=5.0, help="Seconds between commit rounds.")
    parser.add_argument("--tool-runs", type=int, default=2, help="Runs of each Kafka tool.")
    parser.add_argument("--topic-metrics", default="off,topic,partition", help="series: collect settings to count.")
    parser.add_argument("--collect-wait", type=float, default=300.0, help="series: seconds to await broker samples.")
    parser.add_argument("--lag-wait", type=float, default=900.0, help="Seconds to await lag serving every group.")
    parser.add_argument(
        "--steps", default="tools,collect,lag,check,canary", help="main: the steps (also audit, reads, groups, stream)."
    )
    parser.add_argument("--audit-groups", default="1,10,100", help="audit: the numbers of watched groups.")
    parser.add_argument("--audit-cycles", type=int, default=2, help="audit: cycles back to back per group count.")
    parser.add_argument("--read-runs", type=int, default=3, help="reads: runs of each read.")
    parser.add_argument("--share-groups", default="10,100", help="groups: share groups made, per round.")
    parser.add_argument("--streams-groups", type=int, default=5, help="groups: streams groups made (one JVM).")
    parser.add_argument("--group-batch", type=int, default=10, help="groups: share consumers at a time.")
    parser.add_argument("--group-wait", type=float, default=180.0, help="groups: seconds to await a group batch.")
    parser.add_argument("--stream-rows", type=int, default=500_000, help="stream: count rows in the backlog.")
    parser.add_argument("--stream-topics", type=int, default=1000, help="stream: topics of the backlog (2 groups).")
    parser.add_argument("--stream-masters", default="local[1]", help="stream: Spark masters to run on.")
    parser.add_argument("--hold", type=Path, help="main: write the bootstrap here after the fill; wait till deleted.")
    parser.add_argument("--bootstrap", help="costs: the held cluster's bootstrap servers.")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--figures-out", type=Path, help="main: also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    shape = DataShape(args.topics, args.partitions_per_topic, args.groups)
    say(f"shape {shape}, phase {args.phase}")
    with tempfile.TemporaryDirectory(prefix="large-cluster-bench-") as tmp:
        phase = {"main": phase_main, "burrow": phase_burrow, "series": phase_series, "costs": phase_costs}[args.phase]
        result = phase(Path(tmp), shape, args)
    text = json.dumps(result, indent=1, default=str)
    print(text)
    if args.json_out:
        args.json_out.write_text(text)
    if args.phase == "main":
        figures_of(result, shape).write(args.figures_out)


if __name__ == "__main__":
    main()
