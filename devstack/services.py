"""What every local service kafka-pulse starts for tests and the demo has in common: a Debian program found on
PATH, its own directory and loopback port, readiness by polling, and a stop by PID.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from pulse.errors import ConfigError, ProcessFailed, PulseError
from pulse.polling import PollTimeout
from pulse.ports import LOOPBACK, free_ports, is_listening
from pulse.process import ManagedProcess


class ServiceTimeout(PollTimeout):
    """A running service did not reach the awaited state (target up, query result, request) in time; `poll`
    (pulse/polling.py) raises its base class, so `except ServiceTimeout` is for a service's own waits only."""


class QueryFailed(PulseError):
    """A service answered an API call with an error (bad PromQL, rejected alerts, unexpected status)."""


def run_checker(argv: Sequence[str], what: str) -> None:
    """Validate a rendered config with the vendor's own checker (promtool, amtool) before starting, so a bad
    config is reported as such rather than as a process that died at start."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ProcessFailed(f"{' '.join(argv)} did not finish in 60 s") from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        raise ConfigError(f"{what} was rejected by {' '.join(argv)} (exit {done.returncode}):\n{output}")


def duration(seconds: float) -> str:
    """A Prometheus/Alertmanager duration string: 1 -> '1s', 0.5 -> '500ms', 3600 -> '3600s'."""
    if seconds <= 0:
        raise ConfigError(f"duration must be positive, got {seconds!r}")
    millis = round(seconds * 1000)
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


def http_ok(client: httpx.Client, path: str) -> bool:
    """True when GET `path` answers 200; connection errors are 'not yet', for readiness polling."""
    try:
        return client.get(path).status_code == 200
    except httpx.HTTPError:
        return False


def decode_json(response: httpx.Response, what: str) -> Any:
    """The JSON body of `response`, or a QueryFailed naming the call when it is not JSON."""
    try:
        return response.json()
    except ValueError as exc:
        raise QueryFailed(f"{what}: HTTP {response.status_code}, body is not JSON: {response.text[:200]!r}") from exc


class LocalService:
    """One real server process on 127.0.0.1: subclasses say how to prepare its files, its command line and when
    it is ready; this class owns the port, the log, the HTTP client and the stop by PID.

    Nothing is registered globally: the caller keeps the handle and must call `stop()` (or use `with`).
    """

    name: str = "service"
    ready_timeout_s: float = 60.0

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.workdir = workdir
        self.port = port if port is not None else free_ports(1)[0]
        self.process: ManagedProcess | None = None
        self._client: httpx.Client | None = None
        self.startup_s: float | None = None
        """Seconds from launch to ready, for the start-time figures in test reports."""

    # --- what subclasses provide -------------------------------------------------------------------------
    def prepare(self) -> None:
        """Write config files into `workdir` and validate them; runs before the process starts."""

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> Mapping[str, str] | None:
        """The child's environment; None inherits ours."""
        return None

    def is_ready(self) -> bool:
        raise NotImplementedError

    # --- lifecycle --------------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """host:port, as scrape targets and client configs want it."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise ProcessFailed(f"{self.name}: not started")
        return self.process.pid

    @property
    def http(self) -> httpx.Client:
        """A client bound to this service; `trust_env=False` so a proxy in the environment never sees loopback
        traffic."""
        if self._client is None:
            self._client = httpx.Client(base_url=self.url, timeout=10.0, trust_env=False)
        return self._client

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One HTTP call to this service; a refused or broken connection becomes QueryFailed naming the service
        and whether its process is still alive, instead of a bare httpx error."""
        try:
            return self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            state = "running" if self.running() else "not running"
            raise QueryFailed(f"{self.name} ({state}) {method} {path}: {type(exc).__name__}: {exc}") from exc

    def start(self) -> Self:
        """Prepare files, launch, and poll readiness; on any failure the process is stopped before raising."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        self.process = ManagedProcess(self.name, self.argv(), self.log_path, env=self.env(), cwd=self.workdir)
        started = time.monotonic()
        try:
            self.process.start()
            self.process.wait_ready(self.is_ready, self.ready_timeout_s, f"ready on {self.address}")
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        """Stop by PID (SIGTERM, then SIGKILL after the grace period); safe to call twice."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.process is not None:
            self.process.stop()

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def is_listening(self) -> bool:
        return is_listening(self.port)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.process.pid}" if self.process and self.process.popen else "not started"
        return f"{type(self).__name__}({self.address}, {state})"
