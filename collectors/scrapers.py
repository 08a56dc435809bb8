"""Scrapes on their own schedule: one thread per broker or client target (JMX) and one per cluster (Admin API).

Each scraper keeps only its latest result; `collector.py` reads those at /metrics time, so a Prometheus scrape
never waits on JMX, and one slow or hung broker delays nobody else's scrape.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from collectors.catalogue import BeanQuery, TopicSelection
from collectors.cluster_state import ClusterStateTimeout
from collectors.mapping import Family, Origin, map_readings
from collectors.transport import JmxTimeout, JmxTransport
from pulse.errors import PulseError
from pulse.lifecycle import Periodic

_LOG = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class ScrapeResult(Generic[T]):
    """The outcome of the latest scrape, plus what the last good one returned."""

    ok: bool
    finished_s: float
    """Wall-clock time (epoch seconds) the latest scrape ended."""
    duration_s: float
    last_success_s: float | None
    """Wall-clock end of the latest successful scrape; None before the first."""
    value: T | None
    """The latest good value; None while the latest scrape failed (stale values would mislead alerts)."""
    error: str | None = None
    reason: str | None = None
    """One of `FAILURE_REASONS` when the scrape failed."""


FAILURE_REASONS = ("timeout", "unreachable", "error")
"""Why a scrape failed: no answer in time; the endpoint refused or could not be reached; anything else (a malformed
reading such as an MBean name that does not parse, a bug), which is still a failed read, never a frozen one."""


def failure_reason(exc: BaseException) -> str:
    """The `FAILURE_REASONS` entry of a scrape's exception."""
    if isinstance(exc, JmxTimeout | ClusterStateTimeout):
        return "timeout"
    return "unreachable" if isinstance(exc, PulseError) else "error"


@dataclass
class FailureCounts:
    """Failed scrapes by reason since start (exported as a counter)."""

    by_reason: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str) -> None:
        self.by_reason[reason] = self.by_reason.get(reason, 0) + 1


class PeriodicScraper(Generic[T]):
    """Runs `scrape()` every `interval_s` on its own daemon thread and publishes a `ScrapeResult`."""

    def __init__(self, name: str, scrape: Callable[[], T], interval_s: float, clock: Callable[[], float] = time.time):
        self.name = name
        self._scrape = scrape
        self.interval_s = interval_s
        self._clock = clock
        # Fixed rate, not fixed delay: a slow scrape shortens the pause rather than shifting the schedule. A bug
        # in one scrape is logged by the loop and must not end the schedule.
        self.loop = Periodic(f"scrape-{name}", interval_s, lambda: self.scrape_once().ok)
        self._lock = threading.Lock()
        self._result: ScrapeResult[T] | None = None
        self.failures = FailureCounts()
        self.completed = threading.Condition(self._lock)
        """Notified after every scrape; tests await a condition on `result` with it instead of sleeping."""

    @property
    def result(self) -> ScrapeResult[T] | None:
        with self._lock:
            return self._result

    def scrape_once(self) -> ScrapeResult[T]:
        started = time.monotonic()
        previous = self.result
        try:
            value = self._scrape()
        except Exception as exc:  # any failure is a failed read: never the previous value left standing as current
            reason = failure_reason(exc)
            last = previous.last_success_s if previous is not None else None
            error = str(exc) if isinstance(exc, PulseError) else f"{type(exc).__name__}: {exc}"
            result: ScrapeResult[T] = ScrapeResult(
                False, self._clock(), time.monotonic() - started, last, None, error, reason
            )
            _LOG.warning("%s: scrape failed: %s", self.name, error)
            if reason == "error":
                _LOG.debug("%s: scrape failure", self.name, exc_info=True)
        else:
            now = self._clock()
            result = ScrapeResult(True, now, time.monotonic() - started, now, value)
        with self._lock:
            if not result.ok and result.reason is not None:
                self.failures.add(result.reason)
            self._result = result
            self.completed.notify_all()
        return result

    def wait_for(self, predicate: Callable[[ScrapeResult[T]], bool], timeout_s: float) -> ScrapeResult[T]:
        """Block until a published result satisfies `predicate`; TimeoutError names the last result seen."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._result is None or not predicate(self._result):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self.name}: no scrape result matched within {timeout_s} s: {self._result}")
                self.completed.wait(remaining)
            return self._result

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        """Ask the loop to end without waiting: a scrape in flight may be blocked on a hung broker, and a
        BrokerScraper closes its transport right after, which ends such a read."""
        self.loop.stop(timeout_s=0)


class BrokerScraper(PeriodicScraper[dict[str, Family]]):
    """One JMX endpoint's scrape, a broker's or a client target's: transport read -> named families."""

    def __init__(
        self,
        identity: Callable[[], Origin],
        transport: JmxTransport,
        plan: Sequence[BeanQuery],
        selection: TopicSelection,
        interval_s: float,
    ) -> None:
        self.identity = identity
        """Called at every scrape: a broker's rack is learnt from the Admin API after the scraper starts."""
        self.transport = transport

        def scrape() -> dict[str, Family]:
            return map_readings(transport.read(plan), identity(), selection)

        super().__init__(f"{identity().describe()} JMX", scrape, interval_s)

    def stop(self) -> None:
        super().stop()
        self.transport.close()
