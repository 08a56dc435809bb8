"""A stuttering broker: SIGSTOP/SIGCONT cycling of one dev-cluster node, the way a half-dead disk looks to clients.

Requests to the node hang for `stop_ms`, then pass, every `period_ms`; the broker stays registered and in the ISR
(its controller heartbeats are only late), which is the fault slow-broker detection must name. Whatever ends the
cycling (its duration, `stop()`, Ctrl-C, an error), the node is left running: the last signal sent is SIGCONT.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from devstack.cluster import DevCluster
from pulse.errors import ClusterError, ConfigError
from pulse.process import pid_alive

__all__ = ["Stutter", "StutterPlan", "sigterm_as_interrupt", "stutter_node"]


@dataclass(frozen=True)
class StutterPlan:
    """How a node stutters: stopped `stop_ms` out of every `period_ms`, for `duration_s` (None: until stopped)."""

    stop_ms: int
    """How long each SIGSTOP lasts, in ms (the hang clients see)."""
    period_ms: int
    """One stop plus one running stretch, in ms; must exceed `stop_ms` so the node makes progress."""
    duration_s: float | None = None
    """Total time to stutter; None cycles until `Stutter.stop()` or Ctrl-C."""

    def __post_init__(self) -> None:
        if self.stop_ms <= 0:
            raise ConfigError(f"stutter --stop-ms: {self.stop_ms} must be > 0")
        if self.period_ms <= self.stop_ms:
            raise ConfigError(
                f"stutter --period-ms: {self.period_ms} must exceed --stop-ms {self.stop_ms}, "
                "or the node never runs (use `dev pause` for a hung node)"
            )
        if self.duration_s is not None and self.duration_s <= 0:
            raise ConfigError(f"stutter --for: {self.duration_s} must be > 0 seconds")


class Stutter:
    """Cycles SIGSTOP/SIGCONT on one PID, in the caller's thread (`run`) or a background thread (`start`)."""

    def __init__(self, pid: int, plan: StutterPlan, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not pid_alive(pid):
            raise ClusterError(f"stutter: process {pid} is not running")
        self.pid = pid
        self.plan = plan
        self.cycles = 0
        """Completed stop/continue cycles, for reports and tests."""
        self._clock = clock
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _send(self, sig: signal.Signals) -> bool:
        """Signal the node; False once it is gone (nothing left to resume)."""
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def resume(self) -> None:
        """SIGCONT the node; safe to call any number of times, from any thread."""
        with self._lock:
            self._send(signal.SIGCONT)

    def run(self) -> int:
        """Stutter until the duration passes or `stop()` is called; always ends with SIGCONT. Returns the cycles."""
        stop_s = self.plan.stop_ms / 1000
        run_s = (self.plan.period_ms - self.plan.stop_ms) / 1000
        deadline = None if self.plan.duration_s is None else self._clock() + self.plan.duration_s
        try:
            while not self._halt.is_set() and (deadline is None or self._clock() < deadline):
                with self._lock:
                    if self._halt.is_set() or not self._send(signal.SIGSTOP):
                        break
                try:
                    self._halt.wait(stop_s)
                finally:
                    self.resume()
                self.cycles += 1
                self._halt.wait(run_s)
        finally:
            self.resume()
        return self.cycles

    def start(self) -> Stutter:
        """Run the cycling in a daemon thread; `stop()` ends it and leaves the node running."""
        if self._thread is not None:
            raise ClusterError(f"stutter of process {self.pid} already started")
        self._thread = threading.Thread(target=self.run, name=f"stutter-{self.pid}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """End the cycling and SIGCONT the node (also when the thread is gone or was never started)."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self.resume()

    def __enter__(self) -> Stutter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stutter_node(cluster: DevCluster, node_id: int, plan: StutterPlan) -> Stutter:
    """A `Stutter` for one running node of a dev cluster; ClusterError naming the node when it does not run."""
    cluster.node(node_id)
    pid = cluster.pids.get(node_id)
    if pid is None or not pid_alive(pid):
        raise ClusterError(f"kafka node {node_id} is not running; start it with `kafka-pulse dev restart {node_id}`")
    return Stutter(pid, plan)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the CLI stutters, SIGTERM ends it like Ctrl-C does, so `kill` of the command still resumes the node."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
