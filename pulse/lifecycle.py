"""How every long-running command lives: parts built from config (connecting to nothing), started in order,
stopped in reverse, until SIGTERM or Ctrl-C; the one loop shape their worker threads share (`Periodic`); and the
one logging setup those commands share."""

from __future__ import annotations

import errno
import io
import logging
import math
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from pulse.redact import RedactingFormatter, redact_text

_LOG = logging.getLogger(__name__)
_STARTED: weakref.WeakSet[Periodic] = weakref.WeakSet()
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
TICK_LOG_PERIOD_S = 60.0
"""A loop logs a given kind of failing tick at most once per this many seconds; the rest are counted."""


class Service(Protocol):
    """A part of a running command: `start` connects and returns once running, `stop` undoes it."""

    def start(self) -> Any: ...

    def stop(self) -> Any: ...


@dataclass(frozen=True)
class Part:
    """A service with the words a status line uses for it."""

    name: str
    service: Service
    description: str = ""


class Parts:
    """Parts started in the order given, stopped in reverse; a part failing to start stops those started before."""

    def __init__(self, parts: Iterable[Part] = ()) -> None:
        self.parts: list[Part] = list(parts)
        self._started: list[Part] = []

    @property
    def running(self) -> bool:
        """Every part started and none stopped yet."""
        return bool(self.parts) and len(self._started) == len(self.parts)

    def start(self) -> None:
        try:
            for part in self.parts:
                part.service.start()
                self._started.append(part)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop what was started, in reverse; a part failing to stop is logged and the others still stop."""
        while self._started:
            part = self._started.pop()
            try:
                part.service.stop()
            except Exception:
                _LOG.exception("stopping %s failed", part.name)


PINNED_LOGGERS = (
    "kafka",
    "confluent_kafka",
    "py4j",
    "pyspark",
    "jpype",
    "urllib3",
    "requests",
    "httpx",
    "httpcore",
    "h11",
    "h2",
    "hpack",
)
"""Third-party loggers that print a client's config or a request's headers below WARNING (kafka-python logs its
whole config, passwords included, when an admin client starts): kept at WARNING or above whatever the root level,
also after `/v3/admin/loglevel` sets it to debug. Their children (`kafka.conn`) follow."""


def _pinned(name: str) -> bool:
    return any(name == pin or name.startswith(f"{pin}.") for pin in PINNED_LOGGERS)


class ThirdPartyFloor(logging.Filter):
    """On the handler: a pinned logger's record passes only at WARNING or above, and not below the root level, even
    if someone lowers that logger's own level."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _pinned(record.name):
            return True
        return record.levelno >= max(logging.WARNING, logging.getLogger().getEffectiveLevel())


Tick = Callable[[], bool | None]
"""One cycle of a loop. Raising is a failure the loop logs; returning False is one the tick reported itself."""


class Periodic:
    """`tick` every `interval_s` on a daemon thread named `name`, until `stop`: one shape for every worker loop, so
    each has an interruptible wait, a liveness check and a last success for self-health (kafka_pulse/self_health.py).

    A tick that raises is logged (the first of each exception type per `TICK_LOG_PERIOD_S`, the rest counted) and
    the loop goes on. By default the rate is fixed (a slow tick shortens the pause rather than shifting the
    schedule); `fixed_rate=False` pauses `interval_s` after each tick instead."""

    def __init__(
        self,
        name: str,
        interval_s: float,
        tick: Tick,
        *,
        fixed_rate: bool = True,
        wall_aligned: bool = False,
        first_delay_s: float = 0.0,
        min_pause_s: float = 0.0,
        failure_pause_s: float = 0.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`first_delay_s` passes before the first tick; `min_pause_s` bounds the pause after a tick from below
        (so a tick slower than `interval_s` cannot make the loop spin), `failure_pause_s` the pause after a failed
        one (so a loop with no interval cannot spin on a lasting fault); `clock` gives Unix time."""
        self.name = name
        self.interval_s = interval_s
        self._tick = tick
        self.fixed_rate = fixed_rate
        self.wall_aligned = wall_aligned
        """Ticks land on multiples of `interval_s` of `clock` (:00, :15, ...), the first included, so rows written
        by a tick line up across restarts and processes."""
        self.first_delay_s = first_delay_s
        self.min_pause_s = min_pause_s
        self.failure_pause_s = failure_pause_s
        self._clock = clock
        self.stopping = threading.Event()
        """Set once `stop` is asked: a tick that waits on something passes it on, so `stop` interrupts the wait."""
        self.ticks = 0
        self.failures = 0
        """Ticks that raised or returned False."""
        self.last_success_s: float | None = None
        """Unix time the last successful tick ended; None before the first."""
        self.last_error: str | None = None
        """`Type: message` of the last tick that raised (redacted)."""
        self._thread: threading.Thread | None = None
        self._logged_at: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def start(self) -> None:
        """Start the thread (again, after a `stop`); RuntimeError while it still runs."""
        if self.is_alive():
            raise RuntimeError(f"{self.name} is already running")
        self.stopping.clear()
        _STARTED.add(self)
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Ask the loop to end and wait up to `timeout_s` for a tick in flight; True once the thread has ended.
        Idempotent; from the loop's own thread (a tick stopping its loop) it only asks."""
        self.stopping.set()
        thread = self._thread
        if thread is None:
            return True
        if thread is not threading.current_thread() and timeout_s > 0:
            thread.join(timeout_s)
        return not thread.is_alive()

    def is_alive(self) -> bool:
        """Whether the thread runs (False before `start` and after `stop` has returned True)."""
        return self._thread is not None and self._thread.is_alive()

    def tick_once(self) -> bool:
        """One tick on the caller's thread, counted as the loop counts its own; True when it succeeded."""
        try:
            ok = self._tick() is not False
        except Exception as exc:  # one bad cycle must never end the loop
            self._log_failure(exc)
            ok = False
        self.ticks += 1
        if ok:
            self.last_success_s = self._clock()
        else:
            self.failures += 1
        return ok

    def until_aligned_s(self) -> float:
        """Seconds from `clock`'s now to its next multiple of `interval_s`."""
        return self.interval_s - self._clock() % self.interval_s

    def _run(self) -> None:
        first = self.until_aligned_s() if self.wall_aligned else self.first_delay_s
        if first > 0 and self.stopping.wait(first):
            return
        while not self.stopping.is_set():
            started = time.monotonic()
            floor = self.min_pause_s if self.tick_once() else max(self.min_pause_s, self.failure_pause_s)
            if self.wall_aligned:
                pause = self.until_aligned_s()
            elif self.fixed_rate:
                pause = self.interval_s - (time.monotonic() - started)
            else:
                pause = self.interval_s
            if self.stopping.wait(max(pause, floor, 0.0)):
                return

    def _log_failure(self, exc: Exception) -> None:
        kind = type(exc).__name__
        self.last_error = redact_text(f"{kind}: {exc}" if str(exc) else kind)
        now = time.monotonic()
        last = self._logged_at.get(kind)
        if last is not None and now - last < TICK_LOG_PERIOD_S:
            self._held[kind] = self._held.get(kind, 0) + 1
            return
        self._logged_at[kind] = now
        held = self._held.pop(kind, 0)
        more = f" ({held} more like it in the last {TICK_LOG_PERIOD_S:.0f} s)" if held else ""
        _LOG.error("%s: tick failed: %s; the loop goes on%s", self.name, self.last_error, more, exc_info=exc)


def started_loops() -> list[Periodic]:
    """Every `Periodic` started in this process and not yet collected, by name: what /metrics counts per loop."""
    return sorted(_STARTED, key=lambda loop: loop.name)


class _DropWhenClosed(io.RawIOBase):
    """A standard stream's file descriptor whose reader may be gone (`cmd | head`, `tee` killed by Ctrl-C): the
    first write that meets EPIPE points the descriptor at /dev/null and is dropped, so no print or log line can
    abort a teardown half way, and later writes (ours, or a child's that inherited it) cost nothing."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        try:
            return os.write(self._fd, view)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
        silence_fd(self._fd)
        return len(view)


def silence_fd(fd: int) -> None:
    """Point `fd` at /dev/null (its reader is gone)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def guard_std_streams() -> None:
    """Make the process's own stdout and stderr safe against a closed pipe (see `_DropWhenClosed`); idempotent (a
    stream already replaced, by this or by a test's capture, is left alone). Python already ignores SIGPIPE, so a write
    to a closed pipe raises EPIPE rather than killing the process; this turns that into a dropped write."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or stream is not getattr(sys, f"__{name}__") or not isinstance(stream, io.TextIOWrapper):
            continue
        stream.flush()
        safe = io.TextIOWrapper(
            io.BufferedWriter(_DropWhenClosed(stream.fileno())),
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering or name == "stderr",
            write_through=name == "stderr",
        )
        setattr(sys, name, safe)  # the original stays alive as sys.__stdout__/__stderr__, its descriptor open


def configure_logging(level: int = logging.WARNING, quieter: Mapping[str, int] | None = None) -> None:
    """Logs to stderr, one line each with time, level and logger, secrets redacted (pulse/redact.py), the
    third-party loggers pinned (PINNED_LOGGERS); `quieter` raises some further (`check`: kafka at CRITICAL).
    First stdout and stderr are made safe against a closed pipe (`guard_std_streams`): every long-running
    command calls this before it starts anything, so its teardown never depends on its output's reader."""
    guard_std_streams()
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    handler.addFilter(ThirdPartyFloor())
    logging.basicConfig(level=level, handlers=[handler])
    for name in PINNED_LOGGERS:
        pinned = logging.getLogger(name)
        pinned.setLevel(max(logging.WARNING, pinned.level))
    for name, floor in (quieter or {}).items():
        logging.getLogger(name).setLevel(floor)


SIGNAL_SLICE_S = 0.5
"""The longest a wait for a stop signal sleeps at once: a signal may land on a JVM or librdkafka thread, and Python
runs its handler only when the main thread gets back to bytecode."""


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event that SIGTERM and SIGINT set while inside (the previous handlers back after), so a long-running command
    stops what it started whoever signals it, instead of dying with its children left to notice."""
    stopped = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def wait_stopped(stopped: threading.Event, seconds: float = math.inf) -> bool:
    """Wait up to `seconds` for `stopped`, in slices of SIGNAL_SLICE_S; True once it is set."""
    deadline = time.monotonic() + seconds
    while not stopped.wait(min(SIGNAL_SLICE_S, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            return False
    return True


def run_until_signal(service: Service, started: Callable[[], None] = lambda: None) -> None:
    """Start `service`, call `started`, wait for SIGTERM or SIGINT, then stop it (also when starting fails)."""
    with stop_on_signals() as stopped:
        try:
            service.start()
            started()
            wait_stopped(stopped)
        finally:
            service.stop()
