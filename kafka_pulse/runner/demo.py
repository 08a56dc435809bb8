"""The README's demo around `kafka-pulse run` (scripts/demo.sh calls it after `dev up`): real traffic from Kafka's
own client tools (a steady producer and three consumer groups: one keeping up, one too slow, one that stops;
devstack/traffic.py), Alertmanager taking the alerts and Prometheus scraping the one /metrics (each when its Debian
package is installed), a config for the dev cluster with an SLO on the canary's produce counters as Prometheus holds
them, `run` itself, and a "where to look" summary that starts with the status page. On SIGTERM or Ctrl-C everything
it started is stopped, `run`'s whole process group included (Spark's JVM lives there), also when stdout or stderr
is a pipe whose reader is gone (`| tee` stopped by the same Ctrl-C).

Run as `python -m kafka_pulse.runner.demo`; the state lives in `<state dir>/demo` (`KAFKA_PULSE_HOME` moves it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import yaml
from rich.console import Console

from devstack import (
    DEMO_GROUPS,
    DEMO_TOPIC,
    Alertmanager,
    DemoTraffic,
    DevCluster,
    LocalService,
    Prometheus,
    ScrapeTarget,
    dev_home,
    ensure_config_command,
    ensure_tools,
)
from pulse.errors import PulseError
from pulse.lifecycle import configure_logging
from pulse.paths import cache_dir, state_dir
from pulse.ports import free_ports
from pulse.process import ManagedProcess

_LOG = logging.getLogger("demo")
READY_TIMEOUT_S = 300.0
"""`run` answers /metrics after its components' first rounds; generous for a loaded 2-core machine."""
ALERTMANAGER_CONFIG = """\
route:
  receiver: demo
  group_by: ['...']
  group_wait: 5s
receivers:
  - name: demo   # no integration: alerts are shown in Alertmanager's UI and API
"""


SLO_SCHEDULE_S = 15
ATTEMPTS = "sum(increase(kafka_pulse_canary_produce_attempts_total[1m]))"
ERRORS = "(sum(increase(kafka_pulse_canary_produce_errors_total[1m])) or vector(0))"
"""The canary's produce counters per minute, as Prometheus scrapes them from `run`: the demo SLO's events."""


def demo_config(
    listen: str, prometheus_url: str | None, results_dir: Path, alertmanager_url: str | None
) -> dict[str, Any]:
    """kafka-pulse's config for the demo (pure): everything on; with Prometheus, an SLO on the canary's produce
    availability read back from it and evaluated every minute; with Alertmanager, SLO and lag alerts go there."""
    config: dict[str, Any] = {"http": {"listen": listen}}
    # Short lag windows: 5 commits (10 s at the traffic's 2 s auto-commit) and a 25 s STOP warm-up instead of 100 s,
    # so the demo's groups reach OK, WARN/ERR and STOP within a minute.
    config["lag"] = {"intervals": 5, "offset_refresh_s": 5}
    if prometheus_url is not None:
        # Every 15 s: the first minute with scraped counters is evaluated within seconds of closing, not up to a
        # minute (plus Spark's start) later, when the first evaluation at start found nothing yet.
        config["slo"] = {"schedule_s": SLO_SCHEDULE_S, "results_dir": str(results_dir)}
        config["slos"] = [
            {
                "name": "canary-produce-availability",
                "description": "Canary probes acknowledged by their leader (acks=all)",
                "source": {"type": "prometheus", "url": prometheus_url},
                "good": f"{ATTEMPTS} - {ERRORS}",
                "total": ATTEMPTS,
                "objective": 99.9,
                "window": "30d",
            }
        ]
    if alertmanager_url is not None:
        config["alerting"] = {"enabled": True, "alertmanager_url": alertmanager_url}
        config["lag"]["notify"] = {"enabled": True}
    return config


def where_to_look(urls: dict[str, str], home: Path, config_path: Path) -> str:
    """The summary printed once everything answers (pure)."""
    env = f"KAFKA_PULSE_HOME={home} " if os.environ.get("KAFKA_PULSE_HOME") else ""
    lines = ["demo: kafka-pulse is running on the local 3-broker cluster; where to look:"]
    lines += [f"  {name + ':':14}{url}" for name, url in urls.items()]
    lines.append(f"  {'health check:':14}{env}kafka-pulse check --config {config_path}")
    lines.append(f"  {'cluster:':14}{env}kafka-pulse dev status   (faults: dev kill|pause|resume|restart NODE)")
    lines.append("demo: Ctrl-C (or SIGTERM) stops everything")
    return "\n".join(lines)


class Demo:
    """Starts the side services and `run`, keeps the handles, and stops them all (in reverse order) on `stop`."""

    def __init__(self, workdir: Path, stopping: threading.Event) -> None:
        self.workdir = workdir
        self.stopping = stopping
        """Set by SIGTERM or Ctrl-C; the start stops waiting for `run` when it is."""
        self.services: list[LocalService] = []
        self.run: ManagedProcess | None = None
        self.traffic: DemoTraffic | None = None
        self.urls: dict[str, str] = {}
        self.console = Console(stderr=True)
        """Progress of the long steps (a first jar download, the clients' JVMs) on stderr; results go to stdout."""

    @property
    def config_path(self) -> Path:
        return self.workdir / "pulse.yaml"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        cluster = DevCluster.load(dev_home())
        self._start_traffic(cluster)
        (port,) = free_ports(1)
        listen = f"127.0.0.1:{port}"
        alertmanager = self._side(
            "prometheus-alertmanager",
            lambda: Alertmanager(
                self.workdir / "alertmanager", webhook_url="http://127.0.0.1:9/unused", config_text=ALERTMANAGER_CONFIG
            ),
        )
        prometheus = self._side(
            "prometheus",
            lambda: Prometheus(
                self.workdir / "prometheus",
                [ScrapeTarget("kafka-pulse", (listen,))],
                alertmanagers=[alertmanager.address] if alertmanager else (),
                scrape_interval_s=15.0,  # also the scrape timeout: a loaded laptop may take seconds per scrape
                evaluation_interval_s=15.0,
            ),
        )
        config = demo_config(
            listen,
            prometheus.url if prometheus else None,
            self.workdir / "slo-results",
            alertmanager.url if alertmanager else None,
        )
        config_path = self.config_path
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.run = ManagedProcess(
            "kafka-pulse run",
            [sys.executable, "-m", "kafka_pulse.cli.main", "run", "--config", str(config_path)],
            self.workdir / "run.log",
        ).start()
        self.urls["status page"] = f"http://{listen}/"
        self.urls["metrics"] = f"http://{listen}/metrics"
        self.urls["lag API"] = f"http://{listen}/v3/kafka"
        ready = f"serving {self.urls['metrics']}"
        self.run.wait_ready(lambda: self.stopping.is_set() or _answers(self.urls["metrics"]), READY_TIMEOUT_S, ready)
        if self.stopping.is_set():
            return
        if prometheus is not None:
            self.urls["Prometheus"] = prometheus.url
        if alertmanager is not None:
            self.urls["Alertmanager"] = alertmanager.url
        self.urls["logs"] = f"{self.workdir} (run.log, traffic/, prometheus/, alertmanager/); Kafka: {cluster.home}"
        self._write_pids(cluster)

    def _start_traffic(self, cluster: DevCluster) -> None:
        """The producer and the three consumer groups; the client tools' jars are gathered on first use."""
        version = cluster.spec.kafka_version
        with self.console.status(f"gathering Kafka {version}'s client tools from Maven Central (once)..."):
            tools = ensure_tools(version, cache_dir())
            config = ensure_config_command(version, cache_dir())
        self.traffic = DemoTraffic(
            config, tools, self.workdir / "traffic", cluster.spec.bootstrap_servers, min(3, len(cluster.spec.nodes))
        )
        with self.console.status("starting a producer and three consumer groups (Kafka's perf tools)..."):
            self.traffic.start()
        self.console.print(f"demo: traffic on topic {DEMO_TOPIC!r}: groups {', '.join(DEMO_GROUPS)}")

    def _side(self, program: str, make: Any) -> Any:
        """Start a Debian-packaged service if its program is installed; the demo goes on without it otherwise."""
        if shutil.which(program) is None:
            print(f"demo: {program} is not installed; going on without it", flush=True)
            return None
        service = make().start()
        self.services.append(service)
        return service

    def _write_pids(self, cluster: DevCluster) -> None:
        """Every process the demo owns, for an operator (or a test) to check that nothing outlives it."""
        pids = {"run": self.run.pid if self.run else None, **{s.name: s.pid for s in self.services}}
        pids |= self.traffic.pids if self.traffic else {}
        pids |= {f"kafka-{node}": pid for node, pid in cluster.pids.items()}
        (self.workdir / "pids.json").write_text(json.dumps(pids, indent=2))

    def check_once(self) -> None:
        """One `kafka-pulse check` of the running cluster, printed as a first look (its exit code is not ours)."""
        check = ["check", "--config", str(self.config_path), "--timeout", "15"]
        done = subprocess.run(
            [sys.executable, "-m", "kafka_pulse.cli.main", *check], capture_output=True, text=True, timeout=120
        )
        print(done.stdout, end="", flush=True)

    def stop(self) -> None:
        """Stop what was started, in reverse order; one part failing to stop never leaves the others running (the
        ExitStack runs every callback and re-raises the last failure)."""
        with contextlib.ExitStack() as stack:
            if self.traffic is not None:
                stack.callback(self.traffic.stop)
            for service in self.services:
                stack.callback(service.stop)
            if self.run is not None:
                stack.callback(_stop_run, self.run)
            self.traffic, self.services, self.run = None, [], None


def _stop_run(run: ManagedProcess) -> None:
    try:
        run.stop(grace_s=60)
    finally:
        _kill_group(run.pid)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def _kill_group(pgid: int) -> None:
    """SIGKILL whatever is left in `run`'s process group (it has a session of its own): a Spark JVM still
    starting when `run` stopped, say."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def main() -> None:
    configure_logging()
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    demo = Demo(state_dir() / "demo", stopping)
    code = 0
    try:
        demo.start()
        if not stopping.is_set():
            print(where_to_look(demo.urls, state_dir(), demo.config_path), flush=True)
            demo.check_once()
        while not stopping.wait(0.5):
            if demo.run is not None and not demo.run.running():
                print(f"demo: kafka-pulse run exited; see {demo.workdir / 'run.log'}", flush=True)
                code = 1
                break
    except PulseError as exc:
        print(f"demo: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        code = 1
    finally:
        # Whatever stdout is: configure_logging made a closed pipe's writes no-ops, and the stop runs regardless.
        try:
            print("demo: stopping kafka-pulse run, Prometheus, Alertmanager and the traffic", flush=True)
        finally:
            demo.stop()
    sys.exit(code)


if __name__ == "__main__":
    main()
