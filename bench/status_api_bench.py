"""`/api/status` at scale: what the status page costs the lag service while browsers poll it, on synthetic
group-partitions stored through the service's `OffsetStore` (no Kafka), served by the real assembly of
`kafka-pulse lag` (`add_status` over a lag part, the Burrow routes and pulse.http on a loopback port).

Run: python bench/status_api_bench.py [--groups 100000] [--partitions 10] [--topics 1000] [--intervals 10]
                                      [--not-ok-share 0.01] [--pollers 4] [--poll-s 5] [--duration-s 60]
                                      [--burrow-pause-s 0.05] [--timeout-s 60] [--before-tree DIR]
                                      [--figures-out FILE]

Workload: bench/lag_bench.py's layout (group i reads topic i mod topics, `--intervals` commits 60 s apart); every
group catches up (OK) except a `--not-ok-share` of them, which stall (ERR). The clock stands at the windows' end.
`--pollers` clients GET `/api/status` every `--poll-s` (at once when the last answer came later than that) while
one client GETs `/v3/kafka/bench/consumer/{random group}/status`, pausing `--burrow-pause-s` between two, for
`--duration-s`.
Figures: the service lock's hold time spent for the status page (its background refresh with the in-process check,
and the requests), per refresh period and as a share of the wall time, its longest hold; the `/api/status` body size and
request time; the Burrow status route's wall p50/p99/max. The check's Kafka probes go to a closed port (UNKNOWN
after its 4 s), as for a cluster that is down; its lag section is read all the same.

`--before-tree DIR` first runs this bench on the code in DIR (e.g. `git archive main | tar -x -C DIR`) in a child
process and prints its figures beside ours, as the peer: the same machine, the same locked run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from figures import FigureLog, read_run
from lag_bench import COMMIT_EVERY_MS, START_MS, load
from lag_scrape_bench import CLUSTER

from kafka_pulse.runner.assembly import Assembly, add_status
from kafka_pulse.status.board import StatusBoard
from lag.serve.routes import BurrowApi
from lag.service import LagService
from lag.store.lock import ServiceLock
from pulse.config import ClusterConfig, LagConfig, PulseConfig
from pulse.http import Handler, Request, Response, Route
from pulse.lifecycle import Part
from pulse.ports import free_ports

_BURROW = threading.local()
"""Set while a Burrow route handles a request: its lock holds are the route's, not the status page's."""


class TimedLock(ServiceLock):
    """The service lock, timing each outermost hold and charging it to the Burrow route or to the status page."""

    def __init__(self) -> None:
        super().__init__()
        self._mine = threading.local()
        self.holds: dict[str, list[tuple[float, float]]] = {"burrow": [], "page": []}
        """Who -> (start perf_counter, seconds held) of every hold."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = super().acquire(blocking, timeout)
        if got:
            depth = getattr(self._mine, "depth", 0)
            if depth == 0:
                self._mine.since = time.perf_counter()
            self._mine.depth = depth + 1
        return got

    def release(self) -> None:
        depth = self._mine.depth - 1
        self._mine.depth = depth
        if depth == 0:
            since = self._mine.since
            who = "burrow" if getattr(_BURROW, "on", False) else "page"
            self.holds[who].append((since, time.perf_counter() - since))
        super().release()


def burrow_route(handler: Handler) -> Handler:
    def handle(request: Request) -> Response:
        _BURROW.on = True
        try:
            return handler(request)
        finally:
            _BURROW.on = False

    return handle


class LagPart:
    """What `add_status` reads of a lag part (`service`), without its Kafka sources."""

    def __init__(self, service: LagService) -> None:
        self.service = service

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


def fill(service: LagService, groups: int, parts: int, topics: int, intervals: int, not_ok_share: float) -> int:
    """bench/lag_bench.py's layout (group i reads topic i mod topics, `intervals` commits 60 s apart), a fleet as
    it mostly is: every group catches up (OK, each a little further behind than the last), except every
    1/`not_ok_share`-th, which stalls (ERR). Returns the end of the windows (ms)."""
    store = service.store
    hwm = 1_000_000
    end_ms = START_MS + intervals * COMMIT_EVERY_MS
    names = [f"topic-{t:05d}" for t in range(topics)]
    for topic in names:
        for p in range(parts):
            store.add_hwm(CLUSTER, topic, p, hwm, end_ms)
    every = max(1, round(1 / not_ok_share)) if not_ok_share > 0 else 0
    for i in range(intervals):
        ts = START_MS + i * COMMIT_EVERY_MS
        for g in range(groups):
            stalls = every and g % every == 0
            offset = hwm - 100 if stalls else hwm - (intervals - i) * 10 - g % 50
            for p in range(parts):
                store.add_commit(CLUSTER, f"group-{g:07d}", names[g % topics], p, offset, ts, end_ms)
    return end_ms


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def loop(stop: threading.Event, every_s: float, step: Callable[[], None]) -> None:
    while not stop.is_set():
        started = time.monotonic()
        step()
        stop.wait(max(0.0, every_s - (time.monotonic() - started)))


def measure(args: argparse.Namespace) -> FigureLog:
    settings = {"mode": "burrow", "intervals": args.intervals, "min_distance_s": 1, "hwm_history": 2}
    now = [0]
    service = LagService(LagConfig.model_validate(settings), clock_ms=lambda: now[0])
    lock = TimedLock()
    service.lock = lock
    filled = time.perf_counter()
    now[0] = fill(service, args.groups, args.partitions, args.topics, args.intervals, args.not_ok_share) + 1000
    gp = args.groups * args.partitions
    print(f"workload: {args.groups:,} groups x {args.partitions} = {gp:,} group-partitions, stored in "
          f"{time.perf_counter() - filled:.0f} s; load average {load()}")  # fmt: skip
    port, closed = free_ports(2)
    config = PulseConfig.model_validate(
        {
            "clusters": [{"name": CLUSTER, "bootstrap_servers": [f"127.0.0.1:{closed}"]}],
            "http": {"listen": f"127.0.0.1:{port}"},
            "collectors": {"enabled": False},
        }
    )
    clusters: list[ClusterConfig] = list(config.clusters)
    assembly = Assembly(config.http)
    api = BurrowApi(service)
    assembly.mount([Route(r.method, r.pattern, burrow_route(r.handler)) for r in api.routes()])
    assembly.add([Part("lag", LagPart(service), "bench")])
    add_status(assembly, config, clusters, {"canary": "bench", "slo": "bench"})
    board = next(p.service for p in assembly.parts.parts if p.name == "status")
    assert isinstance(board, StatusBoard)
    names = [f"group-{g:07d}" for g in range(args.groups)]
    stop = threading.Event()
    bodies: list[tuple[float, int]] = []
    burrow_ms: list[float] = []
    failures: list[str] = []

    timeouts = {"api": 0, "burrow": 0}

    def poller() -> Callable[[], None]:
        client = httpx.Client(base_url=assembly.url, timeout=args.timeout_s)

        def poll() -> None:
            started = time.perf_counter()
            try:
                answer = client.get("/api/status")
            except httpx.TimeoutException:
                timeouts["api"] += 1
                return
            if answer.status_code != 200:
                failures.append(f"/api/status {answer.status_code}")
            bodies.append((time.perf_counter() - started, len(answer.content)))

        return poll

    burrow_client = httpx.Client(base_url=assembly.url, timeout=args.timeout_s)
    rng = random.Random(23)

    def burrow() -> None:
        started = time.perf_counter()
        try:
            answer = burrow_client.get(f"/v3/kafka/{CLUSTER}/consumer/{rng.choice(names)}/status")
        except httpx.TimeoutException:  # counted at the timeout: the p99 is then at least that
            timeouts["burrow"] += 1
            burrow_ms.append(args.timeout_s * 1000)
            return
        burrow_ms.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            failures.append(f"burrow status {answer.status_code}")

    assembly.start()
    try:
        threads = [
            threading.Thread(target=loop, args=(stop, args.poll_s, poller()), name=f"poller-{i}", daemon=True)
            for i in range(args.pollers)
        ]
        threads.append(threading.Thread(target=loop, args=(stop, args.burrow_pause_s, burrow), daemon=True))
        began, refreshes_before = time.perf_counter(), board.refreshes
        for thread in threads:
            thread.start()
        time.sleep(args.duration_s)
        stop.set()
        for thread in threads:
            thread.join()
        ended, refreshes = time.perf_counter(), board.refreshes - refreshes_before
    finally:
        assembly.stop()
    page = [held for since, held in lock.holds["page"] if began <= since < ended]
    window = ended - began
    at = f"{args.groups}x{args.partitions}, {args.pollers} pollers"
    log = FigureLog("status_api_bench")
    print(f"window {window:.0f} s (pollers stopped after {args.duration_s:g} s, then finished their request), "
          f"{refreshes} refreshes, load average {load()}")  # fmt: skip
    held = sum(page)
    per_refresh = held / (window / board.refresh_s)  # per refresh period: the requests' holds count too
    print(
        f"lock held for the status page: {held:.2f} s in {len(page)} holds = {per_refresh:.3f} s per "
        f"{board.refresh_s:g} s, {100 * held / window:.1f} % of the time; longest {max(page, default=0):.3f} s"
    )
    log.add("status_api.lock_per_refresh", at, per_refresh, "s")
    log.add("status_api.lock_share", at, 100 * held / window, "%")
    log.add("status_api.lock_longest", at, max(page, default=0.0), "s")
    sizes = [n for _, n in bodies]
    took = [t for t, _ in bodies]
    largest, p50 = max(sizes, default=0), quantile(took, 0.5) * 1000
    print(f"/api/status: {len(bodies)} answers ({timeouts['api']} timed out after {args.timeout_s:g} s), body "
          f"{largest:,} bytes (largest), request p50 {p50:.1f} ms, max {max(took, default=0):.1f} s")  # fmt: skip
    log.add("status_api.body_bytes", at, float(largest), "bytes")
    log.add("status_api.request_p50", at, p50, "ms")
    b50, b99 = quantile(burrow_ms, 0.5), quantile(burrow_ms, 0.99)
    print(f"Burrow status: {len(burrow_ms)} requests ({timeouts['burrow']} timed out, counted at the timeout), "
          f"wall p50 {b50:.2f} ms, p99 {b99:.2f} ms, max {max(burrow_ms, default=0):.0f} ms")  # fmt: skip
    log.add("status_api.burrow_status_p50", at, b50, "ms")
    log.add("status_api.burrow_status_p99", at, b99, "ms")
    if failures:
        print(f"FAILED requests: {len(failures)}, first: {failures[0]}")
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--not-ok-share", type=float, default=0.01, help="groups that stall (ERR)")
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--poll-s", type=float, default=5.0)
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--burrow-pause-s", type=float, default=0.05)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="a client gives up on a request after this")
    parser.add_argument("--before-tree", type=Path, help="first run the same bench on the code in this directory")
    parser.add_argument("--figures-out", type=Path, help="also write the figures as JSON (bench/compare.py)")
    args = parser.parse_args()
    peer: dict[str, float] = {}
    if args.before_tree is not None:
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "before.json"
            argv = [
                f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("before_tree", "figures_out")
            ]
            env = {**os.environ, "PYTHONPATH": str(args.before_tree.resolve())}
            print(f"--- before: the code in {args.before_tree}")
            subprocess.run([sys.executable, __file__, *argv, "--figures-out", str(out)], env=env, check=True)
            peer = {f.key: f.value for f in read_run(out)[1]}
        print("--- after: this tree")
    log = measure(args)
    if peer:
        log.figures = [dataclasses.replace(f, peer=peer.get(f.key)) for f in log.figures]
        for f in log.figures:
            ratio = "" if f.ratio is None else f" ({f.ratio:.3g}x)"
            print(f"{f.key}: {f.value:.4g} {f.unit} after, {f.peer} before{ratio}")
    log.write(args.figures_out)


if __name__ == "__main__":
    main()
