"""Who watches the watcher: when each of kafka-pulse's own loops (collectors, canary, lag reader, SLO schedule) last
completed a cycle, on /metrics, and the rule `check` applies to it: older than `STALE_INTERVALS` intervals is stale.

`run` registers a `SelfHealthCollector` (kafka_pulse/runner/heartbeat.py says what each component's last
success is); `check` reads the same families back from the running process (kafka_pulse/check/self_check.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from pulse.lifecycle import started_loops

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


class SelfHealthCollector(Collector):
    """The families docs/metrics.md lists under "Self-health", one series per component."""

    def __init__(self, health: SelfHealth) -> None:
        self.health = health

    def collect(self) -> Iterator[Metric]:
        now = self.health.clock()
        components = self.health.snapshot()
        last = GaugeMetricFamily(
            LAST_SUCCESS_GAUGE, "Unix time of the component's last successful cycle.", labels=["component"]
        )
        interval = GaugeMetricFamily(INTERVAL_GAUGE, "The component's configured cycle.", labels=["component"])
        started = GaugeMetricFamily(
            STARTED_GAUGE, "When this process started watching the component.", labels=["component"]
        )
        stale = GaugeMetricFamily(
            STALE_GAUGE,
            f"1 when the last successful cycle is older than {STALE_INTERVALS} intervals.",
            labels=["component"],
        )
        for c in components:
            if c.last_success_s is not None:
                last.add_metric([c.component], c.last_success_s)
            interval.add_metric([c.component], c.interval_s)
            started.add_metric([c.component], c.started_s)
            stale.add_metric([c.component], 1.0 if c.is_stale(now) else 0.0)
        yield from (last, interval, started, stale)


class LoopCollector(Collector):
    """Ticks and failed ticks of every periodic loop of the process: a loop that keeps failing shows even while
    its component's last success is still recent (a flapping loop)."""

    def collect(self) -> Iterator[Metric]:
        ticks = CounterMetricFamily("kafka_pulse_loop_ticks", "Ticks the periodic loop ran.", labels=["loop"])
        failures = CounterMetricFamily(
            "kafka_pulse_loop_tick_failures", "Ticks of the periodic loop that raised or failed.", labels=["loop"]
        )
        counts: dict[str, tuple[int, int]] = {}
        for loop in started_loops():  # a restarted part's new loop of the same name adds to one series
            seen_ticks, seen_failures = counts.get(loop.name, (0, 0))
            counts[loop.name] = (seen_ticks + loop.ticks, seen_failures + loop.failures)
        for name, (tick_count, failure_count) in counts.items():
            ticks.add_metric([name], tick_count)
            failures.add_metric([name], failure_count)
        yield from (ticks, failures)


def parse_self_health(text: str) -> list[ComponentHealth]:
    """The components a /metrics text describes (pure); ValueError when it is not Prometheus text."""
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
