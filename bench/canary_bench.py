"""Canary bench: end-to-end latency on an idle 3-node cluster against librdkafka's own rtt for the same
broker, and CPU per probe of the `kafka-pulse canary` process.

Run: python bench/canary_bench.py [--seconds 60] [--interval 0.1] [--cpu-intervals 1,0.1]

Part 1, latency: the canary's own ProbeProducer (its client settings: acks=all, idempotent, linger 0) with
`statistics.interval.ms=1000`, its ProbeConsumer (assign(), fetch.wait.max.ms 100), Tracker and Ledger, driven by
a loop like the service's produce and consume loops, on a fresh monitor topic with one partition led by each
broker. Per leader broker: end-to-end latency (send to read back, one monotonic clock) and produce latency (the
delivery report), p50 and p99 over every probe; and the same producer's `brokers.<name>.rtt` (request written to
response read, per broker, µs windows reset each second): p50 as the count-weighted median of the window p50s,
and the mean as sum/cnt. The target: e2e p50 at most 2 ms above rtt p50.

The same run is repeated with the reader's `consume()` answered by `poll()` (first record, not a batch of 500 or
the timeout), to show what the batch wait adds to the canary's e2e figure; only the harness changes.

Part 2, CPU per probe: `kafka-pulse canary` as a child process (all of its threads: producer, consumer, metadata,
connection checks, commit probe, SLI log) at each `--cpu-intervals` probe interval; after a warm-up, its utime +
stime from /proc over `--seconds`, divided by the probes it settled (`kafka_pulse_canary_produce_attempts_total`
from its /metrics). Never this harness's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import yaml
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from canary.availability import AvailabilityWindow, BrokerHealth
from canary.consumer import ProbeConsumer
from canary.events import MemorySink, SinkFanout
from canary.ledger import Ledger
from canary.producer import ProbeProducer
from canary.topic import KafkaPythonReassigner, TopicManager, read_brokers, read_layout
from canary.tracker import Tracker
from canary.view import ClusterView
from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import CanaryConfig, ClusterConfig
from pulse.lifecycle import Periodic
from pulse.paths import cache_dir
from pulse.ports import free_ports, wait_until
from pulse.profile import client_config

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), from /proc/PID/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def weighted_median(values: list[float], weights: list[int]) -> float:
    order = np.argsort(values)
    cumulative = np.cumsum(np.asarray(weights)[order])
    return float(np.asarray(values)[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


# ---- part 1: latency against rtt ------------------------------------------------------------------------------


class FirstRecordReader:
    """Stands in for the reader's librdkafka Consumer with `consume()` answered by `poll()`, which returns with the
    first record instead of waiting for 500 records or the timeout: what the canary's e2e figure would be if its
    reader took each record's read time as it arrives (an experiment; the canary itself is not changed)."""

    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        message = self._consumer.poll(timeout)
        return [] if message is None else [message]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


def measure_latency(
    cluster: ClusterConfig, seconds: float, interval_s: float, first_record: bool
) -> list[dict[str, Any]]:
    config = CanaryConfig(topic=f"canary-bench-{uuid.uuid4().hex[:8]}", interval_s=interval_s)
    admin = AdminClient({**client_config(cluster), "log_level": 3})
    topics = TopicManager(admin, KafkaPythonReassigner(cluster), config)
    view = ClusterView()

    def refresh() -> bool:
        brokers = read_brokers(admin, 5)
        view.update(read_layout(admin, config.topic, 5), {b: i.rack for b, i in brokers.items()})
        return set(view.partitions_led().values()) == {1} and len(view.partitions_led()) == 3

    topics.reconcile(time.monotonic())
    if not wait_until(refresh, 60, 0.5):
        raise SystemExit(f"monitor topic never had one leader per broker: {view.partitions_led()}")

    producer_id = uuid.uuid4().hex
    sink = MemorySink()
    tracker = Tracker(cluster.name, config.topic, producer_id, None, config.loss_deadline_s)
    window = AvailabilityWindow(config.availability_window_s, config.latency_slo_s, config.latency_slo_s)
    ledger = Ledger(tracker, window, SinkFanout([sink]))
    stats: list[str] = []
    settings = {"statistics.interval.ms": 1000, "stats_cb": stats.append}
    producer = ProbeProducer(cluster, config, producer_id, ledger, view, settings=settings)
    consumer = ProbeConsumer(cluster, config, producer_id, ledger)
    if first_record:
        consumer._consumer = FirstRecordReader(consumer._consumer)  # type: ignore[assignment]
    consumer.sync_partitions(view.partitions())
    reader = Periodic("bench-reader", 0, lambda: consumer.poll_once(0.1))  # the poll is the wait
    reader.start()
    warmup_end = time.monotonic() + 5  # connections up, first metadata, JIT of the brokers' request path
    end = warmup_end + seconds
    warming = True
    next_round = time.monotonic()
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_round:
            if warming and now >= warmup_end:
                warming = False
                stats.clear()
                sink.events.clear()
            producer.send_round(consumer.assigned.__contains__)
            next_round = max(next_round + interval_s, now)
            ledger.tick(now, BrokerHealth(frozenset(), now))
        producer.poll(max(0.0, min(0.05, next_round - time.monotonic())))
    producer.close()
    time.sleep(1.0)  # the last probes' reads
    reader.stop(timeout_s=30)
    consumer.close()

    rtt: dict[int, tuple[list[float], list[int], float, int]] = {}
    for blob in stats:
        for broker in json.loads(blob)["brokers"].values():
            window_stats = broker.get("rtt", {})
            if broker.get("nodeid", -1) < 0 or not window_stats.get("cnt"):
                continue
            p50s, counts, total, n = rtt.get(broker["nodeid"], ([], [], 0.0, 0))
            p50s.append(window_stats["p50"] / 1000)
            counts.append(window_stats["cnt"])
            rtt[broker["nodeid"]] = (p50s, counts, total + window_stats["sum"] / 1000, n + window_stats["cnt"])
    rows = []
    for broker in sorted(view.partitions_led()):
        mine = [e for e in sink.events if e.broker == broker and not e.duplicate]
        e2e = [e.e2e_latency_s * 1000 for e in mine if e.consume_ok and e.e2e_latency_s is not None]
        produce = [e.produce_latency_s * 1000 for e in mine if e.produce_latency_s is not None]
        p50s, counts, total, n = rtt[broker]
        rows.append(
            {
                "broker": broker,
                "rack": view.rack(broker),
                "probes": len(mine),
                "lost_or_failed": sum(1 for e in mine if not e.consume_ok),
                "e2e_p50": float(np.percentile(e2e, 50)),
                "e2e_p99": float(np.percentile(e2e, 99)),
                "produce_p50": float(np.percentile(produce, 50)),
                "produce_p99": float(np.percentile(produce, 99)),
                "rtt_p50": weighted_median(p50s, counts),
                "rtt_avg": total / n,
                "rtt_requests": n,
            }
        )
    return rows


# ---- part 2: CPU per probe of the canary process -------------------------------------------------------------


def scrape(client: httpx.Client) -> dict[str, float]:
    """Sum of every sample per sample name on the canary's /metrics."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals


def measure_cpu(bootstrap: str, workdir: Path, seconds: float, interval_s: float) -> dict[str, float]:
    port = free_ports(1)[0]
    config = {
        "clusters": [{"name": "bench", "bootstrap_servers": bootstrap}],
        "canary": {
            "topic": f"canary-cpu-{uuid.uuid4().hex[:8]}",
            "interval_s": interval_s,
            "listen": f"127.0.0.1:{port}",
            "sli_log": {"dir": str(workdir / "sli")},
        },
    }
    path = workdir / f"canary-{interval_s:g}.yaml"
    path.write_text(yaml.safe_dump(config))
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "canary", "--config", str(path)]
    with open(workdir / f"canary-{interval_s:g}.log", "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=5)
    try:

        def settled_everywhere() -> bool:
            try:
                return scrape(client).get("kafka_pulse_canary_records_consumed_total", 0) >= 30
            except httpx.HTTPError:
                return False

        if not wait_until(settled_everywhere, 120, 0.5):
            raise SystemExit(f"the canary at {interval_s:g} s never settled probes; see {workdir}")
        time.sleep(10)  # warm-up past the first reconcile and connection checks
        before, cpu_before, t0 = scrape(client), cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        after, cpu_after, t1 = scrape(client), cpu_seconds(proc.pid), time.monotonic()
    finally:
        proc.terminate()
        proc.wait(30)
        client.close()
    probes = after["kafka_pulse_canary_produce_attempts_total"] - before["kafka_pulse_canary_produce_attempts_total"]
    e2e_n = (
        after["kafka_pulse_canary_e2e_latency_seconds_count"] - before["kafka_pulse_canary_e2e_latency_seconds_count"]
    )
    e2e_sum = after["kafka_pulse_canary_e2e_latency_seconds_sum"] - before["kafka_pulse_canary_e2e_latency_seconds_sum"]
    cpu = cpu_after - cpu_before
    return {
        "interval_s": interval_s,
        "probes": probes,
        "probes_per_s": probes / (t1 - t0),
        "cpu_s": cpu,
        "cpu_share": cpu / (t1 - t0),
        "cpu_ms_per_probe": 1000 * cpu / probes,
        "e2e_mean_ms": 1000 * e2e_sum / e2e_n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=0.1, help="probe interval of the latency part")
    parser.add_argument("--cpu-intervals", default="1,0.1", help="probe intervals of the CPU part")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="pulse-canary-bench-") as tmp:
        home = Path(tmp)
        cluster = DevCluster.plan(home / "kafka", 3, DEFAULT_VERSION, Security.PLAINTEXT)
        cluster.up(cache_dir())
        try:
            for reader, first_record in (("canary reader", False), ("first-record reader", True)):
                rows = measure_latency(dev_cluster_config(cluster), args.seconds, args.interval, first_record)
                print(
                    f"\nLatency, {reader}, {args.seconds:g} s at one probe per partition every {args.interval:g} s"
                    " (ms):"
                )
                print(
                    "| broker (rack) | probes | e2e p50 | e2e p99 | produce p50 | produce p99 | rtt p50 | rtt avg |"
                    " e2e p50 - rtt p50 | target <= 2 ms |"
                )
                print("|---|---|---|---|---|---|---|---|---|---|")
                for r in rows:
                    gap = r["e2e_p50"] - r["rtt_p50"]
                    print(
                        f"| {r['broker']} ({r['rack']}) | {r['probes']} | {r['e2e_p50']:.2f} | {r['e2e_p99']:.2f} | "
                        f"{r['produce_p50']:.2f} | {r['produce_p99']:.2f} | {r['rtt_p50']:.2f} | "
                        f"{r['rtt_avg']:.2f} | {gap:+.2f} | {'met' if gap <= 2.0 else 'missed'} |",
                        flush=True,
                    )
                lost = sum(r["lost_or_failed"] for r in rows)
                print(f"probes not read back: {lost}; rtt requests counted: {sum(r['rtt_requests'] for r in rows)}")
            print(f"\nCPU of the `kafka-pulse canary` process over {args.seconds:g} s:")
            print("| probe interval (s) | probes/s | CPU (% of one core) | CPU per probe (ms) | e2e mean (ms) |")
            print("|---|---|---|---|---|")
            for interval_s in (float(x) for x in args.cpu_intervals.split(",")):
                c = measure_cpu(cluster.spec.bootstrap_servers, home, args.seconds, interval_s)
                print(
                    f"| {interval_s:g} | {c['probes_per_s']:.1f} | {100 * c['cpu_share']:.1f} | "
                    f"{c['cpu_ms_per_probe']:.2f} | {c['e2e_mean_ms']:.2f} |",
                    flush=True,
                )
        finally:
            cluster.down()
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
