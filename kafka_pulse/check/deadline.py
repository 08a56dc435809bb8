"""The check's time budget: one absolute deadline, and work run on daemon threads that are abandoned, never
joined, when the deadline comes first (a hung broker can hold a client call far past any timeout we pass it).

`concurrent.futures` is not used on purpose: its worker threads are joined at interpreter exit, so one call stuck
on a SIGSTOPped broker would hold the process past its budget.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from kafka_pulse.check.facts import FailureKind, ProbeFailed

T = TypeVar("T")


def process_age_s() -> float | None:
    """Seconds since this process started (from /proc), so a budget covers interpreter start and imports too;
    None where /proc is not available."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
            up_s = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, up_s - start_ticks / os.sysconf("SC_CLK_TCK"))


class Deadline:
    """An absolute point on the monotonic clock."""

    def __init__(self, at_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.at_s = at_s
        self._clock = clock

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        return cls(clock() + seconds, clock)

    def remaining(self) -> float:
        return max(0.0, self.at_s - self._clock())

    def share(self, fraction: float, cap_s: float | None = None, floor_s: float = 0.05) -> float:
        """A timeout for one step: `fraction` of what is left, at most `cap_s`, at least `floor_s` (never past the
        deadline)."""
        left = self.remaining()
        wanted = left * fraction if cap_s is None else min(left * fraction, cap_s)
        return min(left, max(wanted, floor_s))

    def earlier(self, seconds: float) -> Deadline:
        """A deadline `seconds` from now, or this one if it comes first."""
        return Deadline(min(self.at_s, self._clock() + seconds), self._clock)

    def before(self, seconds: float) -> Deadline:
        """This deadline moved `seconds` earlier: for work whose caller still needs time after it."""
        return Deadline(self.at_s - seconds, self._clock)

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0


class Task(Generic[T]):
    """`fn` running on a daemon thread; `wait` gives its result, or ProbeFailed(TIMEOUT) at the deadline."""

    def __init__(self, name: str, fn: Callable[[], T | ProbeFailed], done: threading.Event | None = None) -> None:
        self.name = name
        self._fn = fn
        self._finished = threading.Event()
        self._notify = done
        self._result: T | ProbeFailed | None = None
        self.started_s = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"check-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._fn()
        except Exception as exc:  # a client-library surprise is this probe's failure, not the check's
            self._result = ProbeFailed(FailureKind.ERROR, f"{self.name}: {type(exc).__name__}: {exc}")
        self._finished.set()
        if self._notify is not None:
            self._notify.set()

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def result(self) -> T | ProbeFailed | None:
        """The result if finished, else None."""
        return self._result if self._finished.is_set() else None

    def wait(self, deadline: Deadline) -> T | ProbeFailed:
        if self._finished.wait(deadline.remaining()) and self._result is not None:
            return self._result
        waited = time.monotonic() - self.started_s
        return ProbeFailed(FailureKind.TIMEOUT, f"{self.name}: no answer within {waited:.1f} s")


def first_success(tasks: Sequence[Task[T]], done: threading.Event, deadline: Deadline) -> T | ProbeFailed:
    """The first task result that is not a ProbeFailed; when all fail, the most telling failure (anything but a
    timeout); at the deadline, a timeout naming what was still waited for and how the others failed. `done` is the
    event every task sets."""
    while True:
        done.clear()
        results = [t.result() for t in tasks]
        for result in results:
            if result is not None and not isinstance(result, ProbeFailed):
                return result
        if all(r is not None for r in results):
            failures = [r for r in results if isinstance(r, ProbeFailed)]
            telling = [f for f in failures if f.kind is not FailureKind.TIMEOUT] or failures
            return ProbeFailed(telling[0].kind, "; ".join(dict.fromkeys(f.reason for f in telling)))
        if deadline.expired:
            waiting = [t.name for t, r in zip(tasks, results, strict=True) if r is None]
            waited = time.monotonic() - min(t.started_s for t in tasks)
            failed = [r.reason for r in results if isinstance(r, ProbeFailed)]
            also = f" ({'; '.join(dict.fromkeys(failed))})" if failed else ""
            return ProbeFailed(FailureKind.TIMEOUT, f"no answer within {waited:.1f} s from {', '.join(waiting)}{also}")
        done.wait(min(deadline.remaining(), 0.05) or 0.001)


def close_later(*closers: Callable[[], object]) -> None:
    """Close clients on a daemon thread: closing one that talks to a hung broker may block, and the verdict must
    not wait for it."""

    def run() -> None:
        for close in closers:
            with contextlib.suppress(Exception):  # closing is best effort; the process ends soon after
                close()

    threading.Thread(target=run, name="check-close", daemon=True).start()
