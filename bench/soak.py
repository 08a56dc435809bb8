"""Hours, not minutes: `kafka-pulse run` with every component on (canary, lag with its notifier, collectors, an SLO
read back from Prometheus, alerts to Alertmanager) on a 3-node dev cluster with a producer and 200 committing
groups, for `--minutes` (120 for the published figures) with a fault every `--fault-every-s` in turn: a broker
killed with -9 and restarted a minute later, a broker SIGSTOPped for 30 s, Alertmanager down for 2 minutes.

Every `--sample-every-s` it reads `run`'s RSS, threads and open files (and its children's RSS: Spark's JVM) from
/proc and the alert spool from /metrics; every 10 s the status page's overall verdict. At the end: growth per hour
after warm-up (target under 5 %), verdicts OK while a broker was broken or not OK long after it healed, alerts lost
(`kafka_pulse_alerts_dropped_total`) and left in the spool, as JSON, an SVG plot and `--figures-out` figures.

    python3 bench/soak.py --minutes 120 --out-dir /tmp/soak --figures-out /tmp/soak/figures.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import yaml
from figures import FigureLog
from large_cluster_support import answers, descendants, rss_mb, say
from prometheus_client.parser import text_string_to_metric_families
from soak_report import (
    Fault,
    Sample,
    Verdict,
    false_verdict_lines,
    false_verdicts,
    growth_per_hour,
    markdown_rows,
    svg_plot,
)

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("KAFKA_PULSE_HOME", tempfile.mkdtemp(prefix="kp-soak-"))

from devstack import Alertmanager, Prometheus, ScrapeTarget, dev_home  # noqa: E402  # after KAFKA_PULSE_HOME
from devstack.cluster import DevCluster  # noqa: E402
from devstack.populate import fill  # noqa: E402
from devstack.runtime import DEFAULT_VERSION  # noqa: E402
from devstack.topology import DataShape, Security  # noqa: E402
from kafka_pulse.runner.demo import ALERTMANAGER_CONFIG, demo_config  # noqa: E402
from pulse.paths import cache_dir, state_dir  # noqa: E402
from pulse.ports import free_ports  # noqa: E402
from pulse.process import ManagedProcess  # noqa: E402

RECORDS = 10
"""Records `fill` writes to each partition; bench/soak_traffic.py's commits start there."""
BROKER_FAULTS = frozenset({"kill", "pause"})
LOAD_FAULTS = frozenset({"load"})
VERDICT_EVERY_S = 10.0


class TrafficChild:
    """bench/soak_traffic.py as a child, started again whenever it dies; each death is counted with its code and
    recorded as a `load` fault from the last time it was seen alive until it was started again."""

    def __init__(self, home: Path, bootstrap: str, shape: DataShape, soak: Soak) -> None:
        self.argv = [sys.executable, str(REPO / "bench" / "soak_traffic.py"), bootstrap]
        self.argv += [str(shape.topics), str(shape.partitions_per_topic), str(shape.groups)]
        self.log = home / "traffic.log"
        self.soak = soak
        self.deaths: list[int] = []
        self.seen_alive_s = 0.0
        self.process = ManagedProcess("soak traffic", self.argv, self.log).start()

    def keep_alive(self) -> None:
        if self.process.running():
            self.seen_alive_s = self.soak.now()
            return
        code = self.process.popen.returncode if self.process.popen is not None else -1
        self.deaths.append(code if code is not None else -1)
        say(f"traffic exited {code}; started again (see {self.log})")
        self.process = ManagedProcess("soak traffic", self.argv, self.log).start()
        self.soak.faults.append(Fault("load", f"traffic exited {code}", self.seen_alive_s, self.soak.now()))

    def stop(self) -> None:
        self.process.stop(grace_s=60)


def proc_counts(pid: int) -> tuple[int, int]:
    """Threads and open file descriptors of `pid`."""
    return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


def metric_sum(text: str, family: str) -> float:
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name in (family, f"{family}_total")
    )


class Soak:
    """Owns the services, the fault schedule and the readings of one soak."""

    def __init__(self, args: argparse.Namespace, home: Path) -> None:
        self.args, self.home = args, home
        self.samples: list[Sample] = []
        self.faults: list[Fault] = []
        self.verdicts: list[Verdict] = []
        self.started = time.monotonic()
        self.done = threading.Event()
        self.http = httpx.Client(timeout=10.0, trust_env=False)

    def now(self) -> float:
        return time.monotonic() - self.started

    def faults_loop(self, cluster: DevCluster, alertmanager: Alertmanager) -> None:
        kinds = ["kill", "pause", "alertmanager"]
        round_ = 0
        while not self.done.wait(self.args.fault_every_s):
            kind, node = kinds[round_ % 3], 1 + round_ % 3
            began = self.now()
            say(f"fault {round_ + 1}: {kind} {node if kind in BROKER_FAULTS else ''}")
            if kind == "kill":
                cluster.kill(node)
                self.done.wait(60)
                cluster.restart(node, cache_dir())
            elif kind == "pause":
                cluster.pause(node)
                self.done.wait(30)
                cluster.resume(node)
            else:
                alertmanager.stop()
                self.done.wait(120)
                alertmanager.start()
            target = f"broker {node}" if kind in BROKER_FAULTS else "alertmanager"
            self.faults.append(Fault(kind, target, began, self.now()))
            round_ += 1

    def sample(self, pid: int, metrics_url: str) -> None:
        threads, fds = proc_counts(pid)
        # A child that has exited but is not reaped yet (a zombie) has no VmRSS: its NaN would hide the others.
        children = sum(r for r in (rss_mb(c) for c in descendants(pid) if Path(f"/proc/{c}").exists()) if r == r)
        try:
            spool = metric_sum(self.http.get(metrics_url).text, "kafka_pulse_alert_spool_entries")
        except httpx.HTTPError:
            spool = float("nan")
        self.samples.append(Sample(self.now(), rss_mb(pid), threads, fds, children, spool))
        last = self.samples[-1]
        say(f"sample: rss {last.rss_mb:.0f} MB, children {last.children_rss_mb:.0f} MB, {threads} threads, {fds} fds")

    def verdict(self, status_url: str) -> None:
        why: list[str] = []
        try:
            document = self.http.get(status_url).json()
            status = str(document.get("status"))
            for cluster in document.get("clusters", []):
                why += [f"{c['name']}: {c['summary']}" for c in cluster.get("checks", []) if c.get("status") != "OK"]
            why += [f"broker {b['id']}: {b['reason']}" for b in document.get("brokers", []) if b.get("reason")]
        except (httpx.HTTPError, ValueError, KeyError, AttributeError) as exc:
            status = f"unreadable: {type(exc).__name__}"
        self.verdicts.append(Verdict(self.now(), status, tuple(why)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--fault-every-s", type=float, default=600.0)
    parser.add_argument("--sample-every-s", type=float, default=60.0)
    parser.add_argument("--warmup-s", type=float, default=1200.0)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--out-dir", type=Path, default=None)
    parser.add_argument("--figures-out", type=Path, default=None)
    parser.add_argument("--render", type=Path, default=None, help="print the docs' tables of a saved soak.json")
    args = parser.parse_args()
    if args.render is not None:
        print(render(json.loads(args.render.read_text())))
        return
    home = state_dir()
    out_dir = args.out_dir or home / "soak"
    out_dir.mkdir(parents=True, exist_ok=True)
    shape = DataShape(topics=20, partitions_per_topic=6, groups=args.groups)
    cluster = DevCluster.plan(dev_home(), 3, DEFAULT_VERSION, Security.PLAINTEXT)
    cluster.up(cache_dir(), timeout_s=300)
    bootstrap = cluster.spec.bootstrap_servers
    alertmanager: Alertmanager | None = None
    prometheus: Prometheus | None = None
    run: ManagedProcess | None = None
    traffic: TrafficChild | None = None
    soak = Soak(args, home)
    faults: threading.Thread | None = None
    try:
        fill(bootstrap, shape, 3, RECORDS)
        traffic = TrafficChild(home, bootstrap, shape, soak)
        (port,) = free_ports(1)
        listen = f"127.0.0.1:{port}"
        alertmanager = Alertmanager(
            home / "alertmanager", webhook_url="http://127.0.0.1:9/unused", config_text=ALERTMANAGER_CONFIG
        ).start()
        prometheus = Prometheus(
            home / "prometheus",
            [ScrapeTarget("kafka-pulse", (listen,))],
            alertmanagers=[alertmanager.address],
            scrape_interval_s=15.0,
            evaluation_interval_s=15.0,
        ).start()
        config = demo_config(listen, prometheus.url, home / "slo-results", alertmanager.url)
        config_path = home / "pulse.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        argv = [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(config_path)]
        run = ManagedProcess("kafka-pulse run", argv, home / "run.log").start()
        metrics_url, status_url = f"http://{listen}/metrics", f"http://{listen}/api/status"
        run.wait_ready(lambda: answers(soak.http, metrics_url), 300.0, f"serving {metrics_url}")
        say(f"run serving on {listen}; soak for {args.minutes:g} min, home {home}")
        soak.started = time.monotonic()
        faults = threading.Thread(target=soak.faults_loop, args=(cluster, alertmanager), daemon=True)
        faults.start()
        next_sample = 0.0
        while soak.now() < args.minutes * 60:
            if not run.running():
                raise SystemExit(f"run exited early; see {home / 'run.log'}")
            traffic.keep_alive()
            if soak.now() >= next_sample:
                soak.sample(run.pid, metrics_url)
                next_sample += args.sample_every_s
            soak.verdict(status_url)
            soak.done.wait(VERDICT_EVERY_S)  # the soak's own pace: a reading every 10 s, whatever the system does
        soak.done.set()
        faults.join(timeout=300)
        final = drained(soak.http, metrics_url)
        report = summarise(soak, args, final)
        report["summary"]["traffic_deaths"] = traffic.deaths
    finally:
        soak.done.set()
        for part in (traffic, run, prometheus, alertmanager):
            if part is not None:
                part.stop()
        cluster.down()
    (out_dir / "soak.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "soak.svg").write_text(svg_plot(soak.samples, soak.faults))
    (out_dir / "soak.md").write_text(render(report) + "\n")
    say(f"report: {out_dir / 'soak.json'}, plot: {out_dir / 'soak.svg'}")
    print(json.dumps(report["summary"], indent=2))
    figures = FigureLog("soak")
    at = f"{args.minutes:g}min"
    for field, growth in report["summary"]["growth_per_hour"].items():
        if growth is not None:
            figures.add(f"soak_{field}_growth_per_hour", at, growth * 100, "%")
    figures.write(args.figures_out)


def summarise(soak: Soak, args: argparse.Namespace, final_metrics: str) -> dict[str, Any]:
    fields = ("rss_mb", "children_rss_mb", "threads", "fds")
    growth = {f: growth_per_hour(soak.samples, f, args.warmup_s) for f in fields}
    return {
        "summary": {
            "minutes": args.minutes,
            "faults": len(soak.faults),
            "growth_per_hour": growth,
            "false_verdicts": false_verdicts(soak.verdicts, soak.faults, BROKER_FAULTS, LOAD_FAULTS),
            "verdicts": len(soak.verdicts),
            "alerts_sent": metric_sum(final_metrics, "kafka_pulse_alerts_sent"),
            "alerts_dropped": metric_sum(final_metrics, "kafka_pulse_alerts_dropped"),
            "alert_spool_entries_at_end": metric_sum(final_metrics, "kafka_pulse_alert_spool_entries"),
        },
        "samples": [asdict(s) for s in soak.samples],
        "faults": [asdict(f) for f in soak.faults],
        "verdicts": [asdict(v) for v in soak.verdicts],
    }


def render(report: dict[str, Any]) -> str:
    """The tables and lists docs/benchmarks.md shows for a soak, from its saved report."""
    summary = report["summary"]
    samples = [Sample(**s) for s in report["samples"]]
    faults = [Fault(**f) for f in report["faults"]]
    verdicts = [Verdict(v["t_s"], v["status"], tuple(v["why"])) for v in report["verdicts"]]
    end = summary["minutes"]
    minutes = [1, 10, 20, *range(40, int(end), 20), end - 1]
    growth = summary["growth_per_hour"]
    lines = markdown_rows(samples, minutes)
    lines += ["", "| growth per hour after warm-up | " + " | ".join(growth) + " |"]
    lines += ["|---|" + "---|" * len(growth)]
    lines += [
        "| % of the mean | " + " | ".join("-" if g is None else f"{g * 100:+.1f}" for g in growth.values()) + " |"
    ]
    kinds: dict[str, int] = {}
    for f in faults:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    false = false_verdicts(verdicts, faults, BROKER_FAULTS, LOAD_FAULTS)
    lines += ["", f"Faults: {kinds}. Verdicts: {len(verdicts)}, false: {false}."]
    lines += [
        f"Alerts: {summary['alerts_sent']:g} accepted by Alertmanager, {summary['alerts_dropped']:g} dropped, "
        f"{summary['alert_spool_entries_at_end']:g} in the spool at the end. Load child deaths: "
        f"{summary.get('traffic_deaths', [])}."
    ]
    return "\n".join(lines + false_verdict_lines(verdicts, faults, BROKER_FAULTS, LOAD_FAULTS))


def drained(http: httpx.Client, metrics_url: str, timeout_s: float = 300.0) -> str:
    """/metrics once the alert spool is empty (Alertmanager may have come back just now), or at `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = http.get(metrics_url).text
        if metric_sum(text, "kafka_pulse_alert_spool_entries") == 0 or time.monotonic() > deadline:
            return text
        threading.Event().wait(5.0)


if __name__ == "__main__":
    main()
