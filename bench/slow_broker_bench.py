"""Slow-broker detection with the DEFAULT settings on a real 3-node dev cluster (not in CI: about 25 minutes).

Run: python bench/slow_broker_bench.py [--healthy-min 10] [--idle-min 5] [--stutter-broker 2]

What `kafka-pulse run` composes (collectors with the detector, the canary feeding it) runs in this process against a
fresh 3-node cluster under a steady acks=all produce/consume load. Phases, in order:
1. healthy under load for --healthy-min minutes: false positives (brokers flagged; evaluations with a broker slow);
2. `dev stutter` of one broker, 300 ms stopped every 1 s: time until it is flagged (target <= 2 min), and whether
   another broker is flagged meanwhile;
3. stutter stopped: time until the flag clears (target <= 5 min);
4. idle (load stopped) for --idle-min minutes: false positives again.
Also printed: the process's CPU seconds and peak RSS (wall times are taken on a shared, loaded 2-core host).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.stutter import StutterPlan, stutter_node
from devstack.topology import Security
from kafka_pulse.clusters import dev_cluster_config
from kafka_pulse.runner.assembly import Assembly, add_canary, add_collectors
from pulse.config import PulseConfig
from pulse.lifecycle import Periodic
from pulse.paths import cache_dir
from pulse.ports import free_ports
from pulse.profile import client_config


class Load:
    """acks=all producing ~200 records/s to a 6-partition RF 3 topic and a consumer group reading them."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.topic = f"bench-load-{uuid.uuid4().hex[:6]}"
        self.admin = AdminClient(settings)  # held: a collected client fails its pending futures
        self.admin.create_topics([NewTopic(self.topic, 6, 3)])[self.topic].result(30)
        self.producer = Producer({**self.settings, "acks": "all", "linger.ms": 5})
        group = f"bench-load-{uuid.uuid4().hex[:6]}"
        self.consumer = Consumer({**self.settings, "group.id": group, "auto.offset.reset": "earliest"})
        self.consumer.subscribe([self.topic])
        # The clients' polls are the waits: the loops tick without a pause.
        self.loops = [
            Periodic("bench-load-produce", 0, self._produce),
            Periodic("bench-load-consume", 0, self._consume),
        ]
        for loop in self.loops:
            loop.start()

    def _produce(self) -> None:
        for i in range(20):
            self.producer.produce(self.topic, value=b"x" * 200, key=str(i).encode())
        self.producer.poll(0.1)

    def _consume(self) -> None:
        self.consumer.poll(0.5)

    def end(self) -> None:
        for loop in self.loops:
            loop.stop(30)
        self.producer.flush(10)
        self.consumer.close()


class Watch:
    """Polls the board every 0.5 s and remembers every broker ever flagged, per phase."""

    def __init__(self, assembly: Assembly) -> None:
        self.assembly = assembly
        self.load1: list[float] = []
        """The host's 1-minute load average at each poll since the last `load_figures()`."""

    def load_figures(self) -> dict[str, float]:
        """Min, mean and max of the 1-minute load average over the phase just watched, then start a new phase."""
        samples, self.load1 = self.load1 or [os.getloadavg()[0]], []
        return {
            "load1_min": round(min(samples), 1),
            "load1_mean": round(sum(samples) / len(samples), 1),
            "load1_max": round(max(samples), 1),
        }

    def flags(self) -> dict[int, bool]:
        self.load1.append(os.getloadavg()[0])
        return {b: v.slow for b, v in self.assembly.broker_health.snapshot("dev").items()}

    def hold(self, seconds: float) -> dict[str, Any]:
        """Watch for `seconds`: brokers flagged at any poll, and how many evaluations had a broker elevated."""
        flagged: set[int] = set()
        detector = self.detector()
        start_evals = detector.evaluations
        elevated = 0
        seen = start_evals
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            flagged.update(b for b, slow in self.flags().items() if slow)
            latest = detector.latest
            if latest is not None and detector.evaluations != seen:
                seen = detector.evaluations
                elevated += any(v.slow_now for v in latest.evaluation.verdicts.values())
            time.sleep(0.5)
        return {
            "seconds": seconds,
            "evaluations": detector.evaluations - start_evals,
            "evaluations_with_a_broker_elevated": elevated,
            "brokers_flagged": sorted(flagged),
            **self.load_figures(),
        }

    def detector(self) -> Any:
        service: Any = next(p.service for p in self.assembly.parts.parts if p.name == "collectors")
        return service.detectors["dev"]

    def until(self, broker: int, flagged: bool, limit_s: float) -> tuple[float | None, set[int]]:
        """Seconds until `broker`'s flag is `flagged` (None past `limit_s`), and other brokers flagged meanwhile."""
        others: set[int] = set()
        started = time.monotonic()
        while time.monotonic() - started < limit_s:
            flags = self.flags()
            others.update(b for b, slow in flags.items() if slow and b != broker)
            if flags.get(broker, not flagged) == flagged:
                return time.monotonic() - started, others
            time.sleep(0.5)
        return None, others


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def compose(cluster: DevCluster, home: Path) -> tuple[Assembly, PulseConfig]:
    """What `kafka-pulse run` composes for the dev cluster (collectors with the detector, the canary), started."""
    entry = dev_cluster_config(cluster).model_dump(mode="json")
    entry["jmx"]["timeout_s"] = 30
    (port,) = free_ports(1)
    config = PulseConfig.model_validate(
        {"clusters": [entry], "http": {"listen": f"127.0.0.1:{port}"}, "canary": {"topic": "bench-canary"}}
    )
    assembly = Assembly(config.http)
    add_collectors(assembly, config, config.clusters)
    add_canary(assembly, config, config.clusters[0], home / "state")
    assembly.start()
    return assembly, config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--healthy-min", type=float, default=10.0)
    parser.add_argument("--idle-min", type=float, default=5.0)
    parser.add_argument("--stutter-broker", type=int, default=2)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="slow-broker-bench-"))
    cluster = DevCluster.plan(home / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT)
    cluster.up(cache_dir(), timeout_s=120)
    results: dict[str, Any] = {"kafka_version": DEFAULT_VERSION}
    assembly: Assembly | None = None
    try:
        assembly, config = compose(cluster, home)
        results["settings"] = config.slow_brokers.model_dump()
        watch = Watch(assembly)
        load = Load(client_config(config.clusters[0]))
        watch.load_figures()  # the cluster's start is no phase
        cpu0 = cpu_s()
        print(f"healthy under load for {args.healthy_min:g} min ...", flush=True)
        results["healthy_under_load"] = watch.hold(args.healthy_min * 60)
        print(json.dumps(results["healthy_under_load"]), flush=True)
        stutter = stutter_node(cluster, args.stutter_broker, StutterPlan(300, 1000)).start()
        try:
            detect_s, others = watch.until(args.stutter_broker, True, 600)
        finally:
            stutter.stop()
        results["stutter"] = {
            "broker": args.stutter_broker,
            "stop_ms": 300,
            "period_ms": 1000,
            "detection_s": detect_s,
            "other_brokers_flagged": sorted(others),
            "reason": assembly.broker_health.snapshot("dev")[args.stutter_broker].reason,
            **watch.load_figures(),
        }
        print(json.dumps(results["stutter"]), flush=True)
        clear_s, others = watch.until(args.stutter_broker, False, 900)
        results["recovery"] = {"clear_s": clear_s, "other_brokers_flagged": sorted(others), **watch.load_figures()}
        print(json.dumps(results["recovery"]), flush=True)
        load.end()
        print(f"idle for {args.idle_min:g} min ...", flush=True)
        results["idle"] = watch.hold(args.idle_min * 60)
        results["cpu_s"] = round(cpu_s() - cpu0, 1)
        results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    finally:
        if assembly is not None:
            assembly.stop()
        cluster.down()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
