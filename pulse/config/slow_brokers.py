"""Config section `slow_brokers:`: slow-broker detection (collectors/slow_broker.py), on wherever JMX is configured."""

from typing import Self

from pydantic import Field, model_validator

from pulse.config.types import PositiveSeconds, Section
from pulse.envsubst import config_problem


class SlowBrokersConfig(Section):
    """Per-broker slowness verdicts from JMX, a per-broker request probe and the canary, each signal judged against
    the broker's own history and its peers' median, with floors, hysteresis and a cluster-wide stop."""

    enabled: bool = True
    """On by default for every cluster with `jmx.brokers`; a cluster without JMX gets no detector."""
    interval_s: PositiveSeconds = 15.0
    """One evaluation per interval; the probe's samples and the canary's latencies are taken over it."""
    probes_per_interval: int = Field(default=20, ge=1, le=600)
    """Per-broker request probes (a DescribeConfigs of the broker, sent to that broker) spread over an interval; a
    broker that hangs now and then needs several samples per interval to be seen every time."""
    probe_timeout_s: PositiveSeconds = 5.0
    """A probe unanswered for this long counts at this latency (a hung broker is as slow as it gets)."""
    history_evaluations: int = Field(default=40, ge=2, le=10_000)
    """How many of the broker's own past (not elevated) evaluations form its history; 40 x 15 s = 10 minutes."""
    min_history: int = Field(default=4, ge=1)
    """Below this many past values the history test is skipped and the broker is judged against its peers only
    (a broker that just joined), except on windowed JMX signals, which wait for their history; a broker's first
    this many evaluations are a warm-up that raises no flag."""
    history_factor: float = Field(default=3.0, gt=1.0)
    """A signal is elevated when above this times the broker's own history median (and above the peer test)."""
    peer_factor: float = Field(default=3.0, gt=1.0)
    """... and above this times the median of the other brokers' current values."""
    latency_floor_ms: float = Field(default=50.0, ge=0)
    """Below this, no latency signal is elevated, whatever the ratios: idle brokers answer in a few ms, and 2 ms
    against 0.5 ms is noise, not a slow broker. A broker stopped 300 ms of every second puts its probe p90 near
    100 ms above the round's fastest broker on a loaded 2-core host; healthy ones stay below 50 ms there."""
    flush_floor_ms: float = Field(default=1000.0, ge=0)
    """The floor for the mean flush time of an interval's log flushes, 1 s as Cruise Control's for its p99.9: a disk
    whose fsyncs take over a second is failing its producers, and below that flush times vary with the page cache."""
    busy_floor: float = Field(default=0.5, ge=0, le=1)
    """The floor for request-handler and network-processor busy fractions (1 - avg idle)."""
    queue_floor: float = Field(default=20.0, ge=0)
    """The floor for the request queue size (requests waiting for a handler)."""
    enter_after: int = Field(default=3, ge=1)
    """Consecutive slow evaluations before a broker is flagged (3 x 15 s: flagged within a minute)."""
    clear_after: int = Field(default=8, ge=1)
    """Clean evaluations, of the last `clear_after` + 1, before a flag clears (8 x 15 s = 2 minutes): one noisy
    evaluation does not restart the count."""
    max_slow_fraction: float = Field(default=0.1, gt=0, le=1)
    """When more than max(1, this fraction of the brokers) look slow in one evaluation, nobody is flagged or
    cleared: the cluster or the client is slow, not one broker (the verdict says so)."""

    @model_validator(mode="after")
    def _history_fits(self) -> Self:
        if self.min_history > self.history_evaluations:
            raise config_problem(
                f"{self.min_history} exceeds history_evaluations {self.history_evaluations}: the history test "
                "would never run",
                ("min_history",),
            )
        return self
