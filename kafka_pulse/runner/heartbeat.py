"""`run` watching itself: what each component's last successful cycle is (`SelfHealthCollector` puts it on
/metrics, `check` judges it by kafka_pulse/self_health.py's rule), and the heartbeat alert, always firing while the
process is healthy, that examples/alertmanager.yml routes to a dead-man's-switch receiver: when `run` dies, hangs or
loses one of its own loops, the heartbeat stops and the receiver outside raises the alarm (Alertmanager's
"Watchdog" pattern).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kafka_pulse.self_health import (
    INTERVAL_GAUGE,
    LAST_SUCCESS_GAUGE,
    STALE_GAUGE,
    STALE_INTERVALS,
    STARTED_GAUGE,
    SelfHealth,
    Watched,
    watch_loop,
)
from pulse.alerts import Alert
from pulse.config import PulseConfig
from pulse.lifecycle import Part, Periodic, started_loops

if TYPE_CHECKING:
    from kafka_pulse.runner.assembly import Assembly

_LOG = logging.getLogger(__name__)
HEARTBEAT_ALERTNAME = "KafkaPulseHeartbeat"
HEARTBEAT_SEVERITY = "none"
"""Not a page or a ticket: only the dead-man's-switch route takes it (examples/alertmanager.yml)."""

Check = Callable[[], str | None]
"""A condition of the process's health: None while healthy, else why not (stops the heartbeat)."""


class Sender(Protocol):
    """What the heartbeat needs from `pulse.alerts.AlertSink`."""

    def send(self, alerts: Sequence[Alert]) -> object: ...


def heartbeat_alert(
    labels: Mapping[str, str], started: datetime, now: datetime, lifetime: timedelta, stale: Sequence[str]
) -> Alert:
    """The heartbeat as posted at `now` (pure): it resolves by itself `lifetime` after the last post."""
    annotations = {
        "summary": "kafka-pulse is running: this alert always fires; its absence means kafka-pulse stopped",
        "description": "Routed to a dead-man's-switch receiver, which alerts when the repeats stop.",
    }
    if stale:
        annotations["stale_components"] = "; ".join(stale)
    return Alert(
        labels={**labels, "alertname": HEARTBEAT_ALERTNAME, "severity": HEARTBEAT_SEVERITY},
        annotations=annotations,
        starts_at=started,
        ends_at=now + lifetime,
    )


class Heartbeat:
    """Posts the heartbeat through the sink every `interval_s`, while every `checks` entry says healthy."""

    def __init__(
        self,
        sender: Sender,
        health: SelfHealth,
        interval_s: float,
        keepalive_cycles: int,
        labels: Mapping[str, str] | None = None,
        checks: Sequence[Check] = (),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.sender = sender
        self.health = health
        self.interval_s = interval_s
        self.lifetime = timedelta(seconds=interval_s * keepalive_cycles)
        self.labels = dict(labels or {})
        self.checks = list(checks)
        self._clock = clock
        self.started = clock()
        self.sent = 0
        self.withheld = 0
        """Cycles the heartbeat was not sent because a check failed."""
        self.failures = 0
        self.last_success_s: float | None = None
        # A pause of `interval_s` after each post, not a fixed rate: the sink's own timeouts space the posts out.
        self._loop = Periodic("heartbeat", interval_s, self.beat_once, fixed_rate=False)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        """Stops posting; the heartbeat then resolves `lifetime` later, like after a crash (a stopped monitor
        is a stopped monitor)."""
        self._loop.stop(timeout_s=30)

    def beat_once(self) -> bool:
        """One cycle; True when the heartbeat was handed to the sink. Never raises."""
        try:
            problems = [why for why in (check() for check in self.checks) if why is not None]
            if problems:
                self.withheld += 1
                _LOG.error("heartbeat withheld: %s", "; ".join(problems))
                return False
            now = self._clock()
            stale = [c.describe(now.timestamp()) for c in self.health.stale()]
            self.sender.send([heartbeat_alert(self.labels, self.started, now, self.lifetime, stale)])
        except Exception as exc:
            self.failures += 1
            _LOG.error("heartbeat: cycle failed: %s: %s; retried next cycle", type(exc).__name__, exc)
            return False
        self.sent += 1
        self.last_success_s = time.time()
        return True


class HeartbeatCollector(Collector):
    def __init__(self, heartbeat: Heartbeat) -> None:
        self.heartbeat = heartbeat

    def collect(self) -> Iterator[Metric]:
        h = self.heartbeat
        yield CounterMetricFamily("kafka_pulse_heartbeat_sent", "Heartbeat alerts handed to the alert sink.", h.sent)
        yield CounterMetricFamily(
            "kafka_pulse_heartbeat_withheld",
            "Cycles the heartbeat was withheld: one of run's own loops died.",
            h.withheld,
        )
        yield CounterMetricFamily("kafka_pulse_heartbeat_failures", "Heartbeat cycles that failed.", h.failures)
        if h.last_success_s is not None:
            yield GaugeMetricFamily(
                "kafka_pulse_heartbeat_last_success_timestamp_seconds",
                "Unix time the heartbeat was last handed to the sink.",
                h.last_success_s,
            )


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


def add_self_health(assembly: Assembly, config: PulseConfig, sender: Sender | None) -> SelfHealth:
    """Self-health of the parts added so far on /metrics and, with an alert sink, the heartbeat as the last part
    (started after everything it vouches for, stopped first)."""
    health = SelfHealth()
    checks = watch_parts(health, config, assembly.parts.parts)
    assembly.registry.register(SelfHealthCollector(health))
    assembly.registry.register(LoopCollector())
    if sender is not None:
        alerting = config.alerting
        heartbeat = Heartbeat(
            sender, health, alerting.resend_interval_s, alerting.keepalive_cycles, alerting.labels, checks
        )
        assembly.registry.register(HeartbeatCollector(heartbeat))
        description = f"{HEARTBEAT_ALERTNAME} alert every {alerting.resend_interval_s:g} s"
        assembly.add([Part("heartbeat", heartbeat, description)])
    return health


# --- what each component's last success is ------------------------------------------------------------------------


def watch_parts(health: SelfHealth, config: PulseConfig, parts: Sequence[Part]) -> list[Check]:
    """Add every known component among `parts` to `health`; returns the checks of run's own loops (a dead
    thread of the SLO schedule or the lag notifier withholds the heartbeat)."""
    checks: list[Check] = []
    for part in parts:
        service: Any = part.service
        if part.name == "collectors":
            health.add(Watched("collectors", config.collectors.scrape_interval_s, _collectors(service)))
        elif part.name == "canary":
            health.add(Watched("canary", config.canary.interval_s, _canary(service)))
        elif part.name == "lag":
            health.add(Watched("lag_reader", config.lag.offset_refresh_s, _lag_reader(service)))
            notifier = getattr(service, "notifier", None)
            if notifier is not None:
                health.add(Watched("lag_notifier", notifier.interval_s, _attribute(notifier, "last_success_s")))
                checks.append(_thread_check("lag notifier", notifier))
        elif part.name == "audit":
            health.add(Watched("audit", config.audit.interval_s, _attribute(service, "last_cycle_s")))
        elif part.name == "slo":
            health.add(watch_loop("slo_schedule", service.loop))
            checks.append(_thread_check("SLO schedule", service.loop))
    return checks


def _attribute(owner: Any, name: str) -> Callable[[], float | None]:
    def read() -> float | None:
        value = getattr(owner, name)
        return None if value is None else float(value)

    return read


def _thread_check(what: str, loop: Any) -> Check:
    def check() -> str | None:
        return None if loop.is_alive() else f"the {what} thread is not running"

    return check


def _collectors(service: Any) -> Callable[[], float | None]:
    """The least recent Admin API read that succeeded (every cluster this shard reads must be read for a fresh
    verdict: its state, or only its racks when another shard exports the state)."""

    def last() -> float | None:
        results = [scraper.result for scraper in service.admin_scrapers()]  # a property
        if not results or any(r is None or r.last_success_s is None for r in results):
            return None
        return float(min(r.last_success_s for r in results))

    return last


def _canary(service: Any) -> Callable[[], float | None]:
    """The last judged probe round (monotonic in the service, wall-clock here)."""

    def last() -> float | None:
        history = service.history
        if not history:
            return None
        return time.time() - (time.monotonic() - float(history[-1].at_s))

    return last


def _lag_reader(runner: Any) -> Callable[[], float | None]:
    """The least recent high-water-mark read over the lag's clusters."""

    def last() -> float | None:
        reads = [runner.health.last_ok_ms(source.cluster) for source in runner.sources]
        if not reads or any(ms is None for ms in reads):
            return None
        return min(int(ms) for ms in reads if ms is not None) / 1000.0

    return last
