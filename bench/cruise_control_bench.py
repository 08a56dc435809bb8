"""Cruise Control's SlowBrokerFinder and our slow-broker detector side by side on the same faults (not in CI).

Run: PYTHONPATH=. python bench/cruise_control_bench.py --cruise-control-repo DIR [--healthy-min 5] [--idle-min 3]
     [--interval-s 10] [--log-flush-threshold-ms 1000] [--fault stutter|slow-disk [--fsync-ms 1500 --write-ms 0]]
     [--phase-limit-min 10]

DIR is a git clone of github.com/linkedin/cruise-control (bench/cruise_control.py builds its HEAD). A fresh 3-node
Kafka 4.3.1 dev cluster starts with Cruise Control's metrics reporter on every broker; Cruise Control (sampling,
windows and detection every --interval-s, self-healing off) and what `kafka-pulse run` composes (default settings)
watch it together through the phases of bench/slow_broker_bench.py: healthy under load, the fault on broker 2 until
both flag it (or 10 minutes), the fault removed until both clear (or 10 minutes), idle. The fault is the stutter
(300 ms stopped every 1 s) or, with --fault slow-disk, broker 2's log directory on devstack/slow_disk.py's FUSE
pass-through with --fsync-ms added to every fsync (the half-dead disk Cruise Control's finder is built for). Printed
per detector and phase: detection and clear times, false positives, and the host's 1-minute load average.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cruise_control import (
    CruiseControl,
    FinderSettings,
    Round,
    build_cruise_control,
    parse_rounds,
    render_properties,
    reporter_overrides,
)
from slow_broker_bench import Load, Watch, compose, cpu_s

from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.stutter import StutterPlan, stutter_node
from devstack.topology import Security
from kafka_pulse.runner.assembly import Assembly
from pulse.paths import cache_dir
from pulse.ports import free_ports
from pulse.profile import client_config

PHASE_LIMIT_S = 600.0
"""How long the fault (and then the recovery) lasts at most when a detector does not flag (or clear) it."""


def rounds_between(cc: CruiseControl, start: float, end: float) -> list[Round]:
    return [r for r in parse_rounds(cc.log_path.read_text(errors="replace")) if start <= r.at < end]


def cc_summary(rounds: list[Round]) -> dict[str, Any]:
    """False-positive figures for a phase: rounds, rounds with a suspect, rounds reporting a broker, which."""
    return {
        "rounds": len(rounds),
        "rounds_with_a_suspect": sum(1 for r in rounds if r.suspects),
        "rounds_reporting_a_broker": sum(1 for r in rounds if r.reported),
        "brokers_reported": sorted({b for r in rounds for b in r.reported}),
    }


def race(watch: Watch, cc: CruiseControl, broker: int, flagged: bool, started: float, limit_s: float) -> dict[str, Any]:
    """Seconds until each detector's flag for `broker` is `flagged` (None past `limit_s`); brokers wrongly flagged."""
    ours: float | None = None
    theirs: float | None = None
    others: set[int] = set()
    cc_others: set[int] = set()
    while time.time() - started < limit_s and (ours is None or theirs is None):
        flags = watch.flags()
        others.update(b for b, slow in flags.items() if slow and b != broker)
        if ours is None and flags.get(broker, not flagged) == flagged:
            ours = time.time() - started
        rounds = rounds_between(cc, started, time.time() + 1)
        cc_others.update(b for r in rounds for b in r.reported if b != broker)
        if theirs is None:
            hit = next((r for r in rounds if (broker in r.reported) == flagged), None)
            theirs = None if hit is None else hit.at - started
        time.sleep(0.5)
    return {
        "kafka_pulse_s": None if ours is None else round(ours, 1),
        "cruise_control_s": None if theirs is None else round(theirs, 1),
        "kafka_pulse_other_brokers_flagged": sorted(others),
        "cruise_control_other_brokers_reported": sorted(cc_others),
        "cruise_control": cc_summary(rounds_between(cc, started, time.time())),
        "reason": watch.assembly.broker_health.snapshot("dev")[broker].reason,
        **watch.load_figures(),
    }


def hold(watch: Watch, cc: CruiseControl, seconds: float) -> dict[str, Any]:
    started = time.time()
    ours = watch.hold(seconds)
    return {"kafka_pulse": ours, "cruise_control": cc_summary(rounds_between(cc, started, time.time()))}


def start_fault(args: argparse.Namespace, cluster: DevCluster) -> Callable[[], None]:
    """Inject the chosen fault on the chosen broker; the callable returned removes it."""
    if args.fault == "stutter":
        return stutter_node(cluster, args.stutter_broker, StutterPlan(300, 1000)).start().stop
    cluster.slow_disk(args.stutter_broker, args.write_ms, args.fsync_ms)
    return lambda: cluster.slow_disk(args.stutter_broker, 0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cruise-control-repo", type=Path, required=True)
    parser.add_argument("--healthy-min", type=float, default=5.0)
    parser.add_argument("--idle-min", type=float, default=3.0)
    parser.add_argument("--interval-s", type=int, default=10)
    parser.add_argument("--log-flush-threshold-ms", type=float, default=1000.0)
    parser.add_argument("--stutter-broker", type=int, default=2, help="the broker the fault is put on")
    parser.add_argument("--phase-limit-min", type=float, default=PHASE_LIMIT_S / 60)
    parser.add_argument("--fault", choices=("stutter", "slow-disk"), default="stutter")
    parser.add_argument("--fsync-ms", type=float, default=1500.0, help="slow-disk: delay added to every fsync")
    parser.add_argument("--write-ms", type=float, default=0.0, help="slow-disk: delay added to every write")
    args = parser.parse_args()
    build = build_cruise_control(args.cruise_control_repo, cache_dir())
    home = Path(tempfile.mkdtemp(prefix="cruise-control-bench-"))
    interval_ms = args.interval_s * 1000
    slow_disks = {args.stutter_broker: 0} if args.fault == "slow-disk" else None
    cluster = DevCluster.plan(
        home / "dev", 3, DEFAULT_VERSION, Security.PLAINTEXT, slow_disks=slow_disks,
        extra_jars=[build.reporter_jar], broker_overrides=reporter_overrides(interval_ms),
    )  # fmt: skip
    cluster.up(cache_dir(), timeout_s=180)
    finder = FinderSettings(log_flush_threshold_ms=args.log_flush_threshold_ms)
    results: dict[str, Any] = {"kafka_version": DEFAULT_VERSION, "cruise_control": build.root.name,
                               "interval_s": args.interval_s, "finder": finder.__dict__, "fault": args.fault,
                               "fsync_ms": args.fsync_ms, "write_ms": args.write_ms}  # fmt: skip
    assembly: Assembly | None = None
    cc = CruiseControl(build, home / "cc", free_ports(1)[0])
    cc.home.mkdir()
    try:
        assembly, config = compose(cluster, home)
        cc.start(render_properties(cluster.spec.bootstrap_servers, cc.port, cc.home, interval_ms, finder))
        watch = Watch(assembly)
        load = Load(client_config(config.clusters[0]))
        started = time.time()
        while not rounds_between(cc, started, time.time() + 1):  # the finder runs once the monitor is ready
            if time.time() - started > PHASE_LIMIT_S:
                raise SystemExit(f"Cruise Control ran no slow-broker round in {PHASE_LIMIT_S:.0f} s: {cc.log_path}")
            time.sleep(1)
        results["cruise_control_ready_s"] = round(time.time() - started, 1)
        watch.load_figures()
        cpu0 = cpu_s()
        print(f"healthy under load for {args.healthy_min:g} min ...", flush=True)
        results["healthy_under_load"] = hold(watch, cc, args.healthy_min * 60)
        print(json.dumps(results["healthy_under_load"]), flush=True)
        remove_fault = start_fault(args, cluster)
        try:
            results["stutter"] = race(watch, cc, args.stutter_broker, True, time.time(), args.phase_limit_min * 60)
        finally:
            remove_fault()
        print(json.dumps(results["stutter"]), flush=True)
        results["recovery"] = race(watch, cc, args.stutter_broker, False, time.time(), args.phase_limit_min * 60)
        print(json.dumps(results["recovery"]), flush=True)
        load.end()
        print(f"idle for {args.idle_min:g} min ...", flush=True)
        results["idle"] = hold(watch, cc, args.idle_min * 60)
        results["state"] = cc.state()
        results["kafka_pulse_process_cpu_s"] = round(cpu_s() - cpu0, 1)
    finally:
        cc.stop()
        if assembly is not None:
            assembly.stop()
        cluster.down()
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
