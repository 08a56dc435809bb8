"""What `kafka-pulse run` costs and which component costs it (#27 point 5): on a 3-node dev cluster with 200
committing groups, `run` is started with every component on, then with each one alone, and with none but the
listener; for each, the RSS of `run` and of its children (Spark's JVM) once warm, and its CPU over a steady minute.

    python3 bench/run_bench.py --figures-out /tmp/run-figures.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from figures import FigureLog
from large_cluster_support import answers, cpu_seconds, descendants, rss_mb, say

os.environ.setdefault("KAFKA_PULSE_HOME", tempfile.mkdtemp(prefix="kp-run-bench-"))

from devstack import Alertmanager, Prometheus, ScrapeTarget, dev_home  # after KAFKA_PULSE_HOME
from devstack.cluster import DevCluster
from devstack.populate import fill
from devstack.runtime import DEFAULT_VERSION
from devstack.topology import DataShape, Security
from kafka_pulse.runner.demo import ALERTMANAGER_CONFIG, demo_config
from pulse.paths import cache_dir, state_dir
from pulse.polling import poll
from pulse.ports import free_ports
from pulse.process import ManagedProcess

COMPONENTS = ("collectors", "canary", "lag", "slo")


def children_rss(pid: int) -> float:
    return sum(r for r in (rss_mb(c) for c in descendants(pid)) if r == r)  # NaN: a child not reaped yet


def children_cpu(pid: int) -> float:
    total = 0.0
    for child in descendants(pid):
        try:
            total += cpu_seconds(child)
        except OSError:
            continue
    return total


def variant(base: dict[str, Any], on: frozenset[str]) -> dict[str, Any]:
    """`base` with only the components in `on` enabled (pure)."""
    config = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    for component in COMPONENTS:
        config.setdefault(component, {})
        config[component]["enabled"] = component in on
    if "lag" not in on:
        config["lag"].pop("notify", None)
    if "slo" not in on:
        config.pop("slos", None)
    return config


def measure(home: Path, name: str, config: dict[str, Any], warm_s: float, steady_s: float) -> dict[str, float]:
    path = home / f"run-{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    argv = [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(path)]
    run = ManagedProcess(f"run {name}", argv, home / f"run-{name}.log").start()
    url = f"http://{config['http']['listen']}/metrics"
    http = httpx.Client(timeout=10.0, trust_env=False)
    try:
        poll(lambda: answers(http, url), bool, timeout_s=300, what=f"run {name} serving {url}")
        time.sleep(warm_s)  # the bench's pace: components reach their steady cycle (a first SLO run, lag windows)
        cpu0, kids0, wall0 = cpu_seconds(run.pid), children_cpu(run.pid), time.monotonic()
        time.sleep(steady_s)
        wall = time.monotonic() - wall0
        out = {
            "rss_mb": rss_mb(run.pid),
            "children_rss_mb": children_rss(run.pid),
            "cpu_pct": 100 * (cpu_seconds(run.pid) - cpu0) / wall,
            "children_cpu_pct": 100 * (children_cpu(run.pid) - kids0) / wall,
        }
    finally:
        http.close()
        run.stop(grace_s=60)
    say(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in out.items()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm-s", type=float, default=90.0)
    parser.add_argument("--steady-s", type=float, default=60.0)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--only", action="append", default=None, help="a run's name (repeatable): `all`, `slo alone`")
    parser.add_argument("--figures-out", type=Path, default=None)
    args = parser.parse_args()
    home = state_dir()
    cluster = DevCluster.plan(dev_home(), 3, DEFAULT_VERSION, Security.PLAINTEXT)
    cluster.up(cache_dir(), timeout_s=300)
    results: dict[str, dict[str, float]] = {}
    try:
        fill(cluster.spec.bootstrap_servers, DataShape(20, 6, args.groups), 3, 10)
        with Alertmanager(home / "am", webhook_url="http://127.0.0.1:9/unused", config_text=ALERTMANAGER_CONFIG) as am:
            (port,) = free_ports(1)
            listen = f"127.0.0.1:{port}"
            targets = [ScrapeTarget("kafka-pulse", (listen,))]
            with Prometheus(home / "prometheus", targets, scrape_interval_s=15.0, evaluation_interval_s=15.0) as prom:
                base = demo_config(listen, prom.url, home / "slo-results", am.url)
                runs = {"all": frozenset(COMPONENTS), "none": frozenset[str]()}
                runs |= {f"{c} alone": frozenset({c}) for c in COMPONENTS}
                for name, on in runs.items():
                    if args.only and name not in args.only:
                        continue
                    results[name] = measure(home, name.replace(" ", "-"), variant(base, on), args.warm_s, args.steady_s)
    finally:
        cluster.down()
    print(f"{'run':<18}{'RSS MB':>8}{'children MB':>13}{'CPU %':>8}{'children CPU %':>16}")
    for name, r in results.items():
        print(
            f"{name:<18}{r['rss_mb']:>8.0f}{r['children_rss_mb']:>13.0f}{r['cpu_pct']:>8.1f}{r['children_cpu_pct']:>16.1f}"
        )
    figures = FigureLog("run")
    for name, r in results.items():
        key = name.replace(" ", "_")
        figures.add(f"run_{key}_rss_mb", "3 brokers", r["rss_mb"] + r["children_rss_mb"], "MB")
        figures.add(f"run_{key}_cpu_pct", "3 brokers", r["cpu_pct"] + r["children_cpu_pct"], "% of a core")
    figures.write(args.figures_out)


if __name__ == "__main__":
    main()
