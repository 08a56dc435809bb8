"""Who watches the watcher: when each of kafka-pulse's own loops (collectors, canary, lag reader, SLO schedule) last
completed a cycle, on /metrics, and the rule `check` applies to it: older than `STALE_INTERVALS` intervals is stale.

`run` registers a `SelfHealthCollector` (kafka_pulse/runner/heartbeat.py, which also says what each component's
last success is); `check` reads the same families back from the running process
(kafka_pulse/check/consult/self_check.py), without importing prometheus_client unless there is a text to parse.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

_LOG = logging.getLogger(__name__)
STALE_INTERVALS = 3
"""A component whose last successful cycle is older than this many of its intervals is stale."""
LAST_SUCCESS_GAUGE = "kafka_pulse_component_last_success_timestamp_seconds"
INTERVAL_GAUGE = "kafka_pulse_component_interval_seconds"
STALE_GAUGE = "kafka_pulse_component_stale"
STARTED_GAUGE = "kafka_pulse_component_started_timestamp_seconds"


@dataclass(frozen=True)
class ComponentHealth:
    """One of the process's own loops as seen at one moment."""

    component: str
    interval_s: float
    """How often it should succeed (its configured cycle)."""
    started_s: float
    """Unix time the process started watching it: a component that never succeeded is judged from here."""
    last_success_s: float | None
    """Unix time of its last successful cycle; None before the first."""

    def age_s(self, now_s: float) -> float:
        """Seconds since the last success (or since the start, before any)."""
        return now_s - (self.last_success_s if self.last_success_s is not None else self.started_s)

    def is_stale(self, now_s: float) -> bool:
        return self.age_s(now_s) > STALE_INTERVALS * self.interval_s

    def describe(self, now_s: float) -> str:
        """One line for an operator: what is stale and since when."""
        since = "no successful cycle" if self.last_success_s is None else "last successful cycle"
        return (
            f"{self.component}: {since} for {self.age_s(now_s):.0f} s, more than {STALE_INTERVALS} intervals "
            f"of {self.interval_s:g} s"
        )


@dataclass(frozen=True)
class Watched:
    """A component to watch: its name, interval and how to read its last success (Unix time or None)."""

    component: str
    interval_s: float
    last_success_s: Callable[[], float | None]


class Loop(Protocol):
    """What self-health reads of a worker loop (pulse.lifecycle.Periodic)."""

    @property
    def interval_s(self) -> float: ...

    @property
    def last_success_s(self) -> float | None: ...


def watch_loop(component: str, loop: Loop) -> Watched:
    """A loop whose last successful tick is its component's last success."""
    return Watched(component, loop.interval_s, lambda: loop.last_success_s)


class SelfHealth:
    """The components of one process, read at each scrape (nothing runs on its own)."""

    def __init__(self, watched: Iterable[Watched] = (), clock: Callable[[], float] = time.time) -> None:
        self.watched = list(watched)
        self.clock = clock
        """Unix time now (the staleness judged on /metrics uses it too)."""
        self.started_s = clock()

    def add(self, watched: Watched) -> None:
        self.watched.append(watched)

    def snapshot(self) -> list[ComponentHealth]:
        return [ComponentHealth(w.component, w.interval_s, self.started_s, _read(w)) for w in self.watched]

    def stale(self) -> list[ComponentHealth]:
        now = self.clock()
        return [c for c in self.snapshot() if c.is_stale(now)]


def _read(watched: Watched) -> float | None:
    try:
        return watched.last_success_s()
    except Exception:  # a component's own state must never break a scrape; unknown reads as "no success"
        _LOG.debug("self-health: cannot read %s's last success", watched.component, exc_info=True)
        return None


def parse_self_health(text: str) -> list[ComponentHealth]:
    """The components a /metrics text describes (pure); ValueError when it is not Prometheus text."""
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, dict[str, float]] = {LAST_SUCCESS_GAUGE: {}, INTERVAL_GAUGE: {}, STARTED_GAUGE: {}}
    for family in text_string_to_metric_families(text):
        if family.name in values:
            for sample in family.samples:
                component = sample.labels.get("component")
                if component is not None:
                    values[family.name][component] = float(sample.value)
    intervals, started = values[INTERVAL_GAUGE], values[STARTED_GAUGE]
    return [
        ComponentHealth(name, intervals[name], started.get(name, 0.0), values[LAST_SUCCESS_GAUGE].get(name))
        for name in sorted(intervals)
    ]
