"""The status page's state, refreshed on a thread of its own every REFRESH_S: the check's sections per cluster
(they make the overall verdict), judged inside `lag` and `run` from what the process's components already read
(`in_process.py`: no Kafka client of the board's own, nothing produced), and readings of those components
(canary, the lag evaluator's snapshot, SLO schedule), made into the document and encoded once per refresh, so an
`/api/status` request only sends those bytes: it never evaluates a group nor opens a Kafka connection."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.judge.verdict import Report, Section, Status
from kafka_pulse.status.document import (
    CanaryReading,
    SloPoint,
    SloView,
    StatusInputs,
    slo_key,
    status_document,
)
from kafka_pulse.status.in_process import CheckRunner, ShareSource
from kafka_pulse.status.lag_snapshot import LagSnapshot, LagSnapshots
from kafka_pulse.status.quantiles import bucket_delta
from kafka_pulse.status.routes import EncodedDocument, encode_document
from pulse.config import ClusterConfig, PulseConfig
from pulse.lifecycle import Periodic

if TYPE_CHECKING:
    from canary import CanaryService
    from lag import LagReader
    from slo import SloResult

REFRESH_S = 5.0
"""Seconds between two refreshes of the document (the page polls at the same pace)."""
CHECK_TIMEOUT_S = 4.0
"""Budget of each cluster's check; a hung broker costs the refresh at most this much."""
JOIN_GRACE_S = 2.0
"""What a refresh waits past CHECK_TIMEOUT_S for a check before reporting it as not finished."""
NOT_FINISHED = "check did not finish within"
LATENCY_WINDOW_S = 300.0
"""Span of the canary latency quantiles: the newest histogram reading minus the one about this old."""
HISTORY_POINTS = 1440
"""Budget points kept per SLO instance (a day of 1-minute evaluations)."""


class SloReadings(Protocol):
    """What the board reads of the SLO schedule (kafka_pulse/runner/slo_schedule.py's `SloSchedule`): the runner
    starts the board, so the board names only this, never the runner."""

    latest: list[SloResult]
    runs: dict[str, int]
    last_error: str | None


def _run_check(config: PulseConfig, cluster: ClusterConfig, deadline: Deadline) -> tuple[Section, ...]:
    from kafka_pulse.check.health_check import run_check

    return run_check(config, cluster, deadline)


@dataclass
class StatusSources:
    """What the board reads: the clusters to check and the components of this process (None when not running
    here, with the reason in `off`)."""

    config: PulseConfig
    clusters: Sequence[ClusterConfig]
    canary: CanaryService | None = None
    lag: LagReader | None = None
    slo: SloReadings | None = None
    off: dict[str, str] = field(default_factory=dict)
    shares: ShareSource | None = None
    """Lag's share-group board when `lag.share_groups.enabled` (its verdicts: the check's and the page's)."""


def every_cluster(
    clusters: Sequence[ClusterConfig], finished: Mapping[int, Report], now: datetime, waited_s: float
) -> list[Report]:
    """One report per configured cluster, in config order (pure): a check that did not finish is UNKNOWN with the
    reason, so a cluster never drops off the page and the overall verdict is never better than UNKNOWN."""
    return [
        finished.get(i)
        or Report(
            cluster=c.name,
            bootstrap_servers=tuple(c.bootstrap_servers),
            sections=(
                Section("check", Status.UNKNOWN, "check did not finish", (f"{NOT_FINISHED} {CHECK_TIMEOUT_S} s",)),
            ),
            checked_at=now,
            elapsed_s=waited_s,
            timeout_s=CHECK_TIMEOUT_S,
        )
        for i, c in enumerate(clusters)
    ]


class StatusBoard:
    """Holds the latest `/api/status` body; `start` publishes a first one, runs the first refresh on its thread and
    returns."""

    def __init__(
        self,
        sources: StatusSources,
        refresh_s: float = REFRESH_S,
        check: CheckRunner = _run_check,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        lag: LagSnapshots | None = None,
    ) -> None:
        """`lag` is the snapshot holder the in-process check reads too (one is made over `sources.lag` if not
        given)."""
        self.sources = sources
        if lag is None and sources.lag is not None:
            lag = LagSnapshots(sources.lag, sources.config.lag.status_page_groups)
        self.lag = lag
        self._published: EncodedDocument | None = None
        self.publications = 0
        """Documents built and encoded (one per refresh, and the first at start)."""
        self.refresh_s = refresh_s
        self._check = check
        self._clock = clock
        self._lock = threading.Lock()
        self._reports: list[Report] = []
        self._latency: deque[tuple[float, dict[int, dict[float, float]]]] = deque()
        self._history: dict[str, deque[SloPoint]] = {}
        # A refresh failing must never end the page (nor `run`): the loop logs it and refreshes again.
        self._loop = Periodic("status-board", refresh_s, self.refresh, min_pause_s=0.5)
        self.refreshes = 0

    def start(self) -> None:
        self.encoded()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop(CHECK_TIMEOUT_S + 5)

    def refresh(self) -> None:
        """One round: the lag verdicts read once, every cluster's check, in parallel, each within CHECK_TIMEOUT_S,
        then the document built and encoded for the requests until the next round."""
        snapshot = self.lag.take() if self.lag is not None else None
        results: dict[int, Report] = {}
        threads = [
            threading.Thread(target=self._check_one, args=(i, c, results), name=f"status-check-{c.name}", daemon=True)
            for i, c in enumerate(self.sources.clusters)
        ]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        for thread in threads:
            thread.join(timeout=max(0.0, started + CHECK_TIMEOUT_S + JOIN_GRACE_S - time.monotonic()))
        reports = every_cluster(self.sources.clusters, dict(results), self._clock(), time.monotonic() - started)
        with self._lock:
            self._reports = reports
        self._publish(self.document(snapshot))
        self.refreshes += 1

    def encoded(self) -> EncodedDocument:
        """The `/api/status` body of the last refresh (built once now if none is yet): what a request sends."""
        with self._lock:
            published = self._published
        return published if published is not None else self._publish(self.document())

    def _publish(self, document: dict[str, Any]) -> EncodedDocument:
        encoded = encode_document(document)
        with self._lock:
            self._published = encoded
            self.publications += 1
        return encoded

    def _check_one(self, index: int, cluster: ClusterConfig, into: dict[int, Report]) -> None:
        started = time.monotonic()
        try:
            sections = self._check(self.sources.config, cluster, Deadline(started + CHECK_TIMEOUT_S))
        except Exception as exc:  # reported as UNKNOWN on the page, never as OK
            sections = (Section("check", Status.UNKNOWN, "check failed", (f"{type(exc).__name__}: {exc}",)),)
        into[index] = Report(
            cluster=cluster.name,
            bootstrap_servers=tuple(cluster.bootstrap_servers),
            sections=sections,
            checked_at=self._clock(),
            elapsed_s=time.monotonic() - started,
            timeout_s=CHECK_TIMEOUT_S,
        )

    def _record_slo_history(self) -> None:
        """Each new evaluation of the schedule becomes a point, the moment the document is read after it."""
        schedule = self.sources.slo
        if schedule is None:
            return
        with self._lock:
            for r in list(schedule.latest):
                points = self._history.setdefault(slo_key(r.name, r.labels), deque(maxlen=HISTORY_POINTS))
                if not points or points[-1].at != r.at:
                    points.append(SloPoint(r.at, r.budget_remaining))

    # --- reading --------------------------------------------------------------------------------------------------

    def document(self, snapshot: LagSnapshot | None = None) -> dict[str, Any]:
        """A document of this moment: the last refresh's check reports with the components' state now and the lag
        verdicts of `snapshot` (one taken now if not given). A refresh builds it; requests read `encoded`."""
        with self._lock:
            reports = list(self._reports)
        s = self.sources
        if snapshot is None and self.lag is not None:
            snapshot = self.lag.take()
        grafana = s.config.dashboards.grafana_url
        return status_document(
            StatusInputs(
                generated_at=self._clock(),
                refresh_s=self.refresh_s,
                reports=reports,
                canary=self._canary(),
                groups=None if snapshot is None else snapshot.listed,
                group_counts=() if snapshot is None else snapshot.counts,
                groups_limit=None if snapshot is None else snapshot.ok_limit,
                groups_dropped=s.lag.dropped_groups() if s.lag is not None else {},
                slo=self._slo(),
                off=s.off,
                grafana_url=str(grafana) if grafana is not None else None,
                burrow_api="/v3/kafka" if s.lag is not None else None,
                shares=s.shares.latest() if s.shares is not None else None,
            )
        )

    def _canary(self) -> CanaryReading | None:
        service = self.sources.canary
        if service is None:
            return None
        now = time.monotonic()
        current = _latency_buckets(service)
        with self._lock:
            self._latency.append((now, current))
            while len(self._latency) > 1 and self._latency[1][0] <= now - LATENCY_WINDOW_S:
                self._latency.popleft()
            since, before = self._latency[0]
        latency = {b: bucket_delta(buckets, before.get(b) if since < now else None) for b, buckets in current.items()}
        return CanaryReading(
            cluster=service.cluster.name,
            window_s=service.config.availability_window_s,
            latency_window_s=now - since if since < now else 0.0,
            latency_span_s=LATENCY_WINDOW_S,
            racks=service.view.known_brokers(),
            up=service.broker_up(),
            availability=service.availability(),
            latency=latency,
        )

    def _slo(self) -> SloView | None:
        schedule = self.sources.slo
        if schedule is None:
            return None
        self._record_slo_history()
        with self._lock:
            history = {k: list(v) for k, v in self._history.items()}
        return SloView(
            list(schedule.latest), history, schedule.runs["ok"], schedule.runs["failed"], schedule.last_error
        )


def _latency_buckets(service: CanaryService) -> dict[int, dict[float, float]]:
    """Broker -> cumulative produce latency buckets (`le` -> count), summed over the series' other labels."""
    out: dict[int, dict[float, float]] = {}
    for metric in service.metrics.produce_latency.collect():
        for sample in metric.samples:
            broker = sample.labels.get("broker", "")
            if not sample.name.endswith("_bucket") or not broker.isdigit():
                continue
            buckets = out.setdefault(int(broker), {})
            le = float(sample.labels["le"])
            buckets[le] = buckets.get(le, 0.0) + sample.value
    return out
