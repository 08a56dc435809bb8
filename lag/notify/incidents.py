"""Notifications: one incident per consumer group, opened when its status reaches the configured severity and
closed when it is OK again, delivered through the suite's alert sink (`pulse.alerts`: `Incidents` keeps open
alerts alive and resends resolves, `AlertSink` posts them to Alertmanager or spools them).

Burrow's notifier model (`core/internal/notifier/`): an incident gets an id and a start when a group first reaches the
threshold; it closes when the group is OK again, whatever the threshold. Ours also: the alert's `severity` label
follows the group's status while the incident lasts (WARN -> ticket, ERR -> page; labels are the alert's
identity, so a change resolves the old alert and fires the new one, same incident id and start); an UNKNOWN
group (its cluster cannot be read) neither opens nor closes anything, and its open incident stays firing with
"unknown" in its annotations; a group that disappears (deleted, expired) is closed. `IncidentBook` is pure;
`LagNotifier` runs it on a timer and hands `Incidents.reconcile` the alerts of the open incidents.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.protocol import GroupStatus, Status
from lag.store.access import LagReader
from pulse.alerts import Alert, AlertSender, Incidents, render_link
from pulse.config import AlertingConfig
from pulse.lifecycle import Periodic

_LOG = logging.getLogger(__name__)
ALERTNAME = "KafkaConsumerGroupUnhealthy"
SEVERITY_LABEL = {Status.WARN: "ticket", Status.ERR: "page"}
"""The suite's tiers (docs/alerting.md): ERR pages, WARN opens a ticket."""


@dataclass(frozen=True, slots=True)
class Transition:
    """What an update changed for one group's incident (for logs and tests; delivery works from `firing`)."""

    kind: Literal["open", "close", "severity"]
    cluster: str
    group: str
    severity: Status
    """The incident's severity after the transition (before it, for a close)."""
    incident_id: str


@dataclass
class GroupIncident:
    """An open incident of one group."""

    id: str
    start_ms: int
    severity: Status
    """WARN or ERR: the status whose alert is firing."""
    last: GroupStatus
    """The latest known verdict (the one before UNKNOWN, while the cluster cannot be read)."""
    unknown_reason: str = ""
    """Why the group is UNKNOWN now; empty while it is judged."""


class IncidentBook:
    """Incidents by (cluster, group); `update` takes every group's latest status, `firing` gives the alerts."""

    def __init__(
        self,
        threshold: Status = Status.ERR,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        api_url: str | None = None,
        routing_labels: Mapping[str, str] | None = None,
        runbook_template: str | None = None,
    ) -> None:
        if threshold not in (Status.WARN, Status.ERR):
            raise ValueError(f"threshold must be WARN or ERR, got {threshold.name}")
        self.threshold = threshold
        self.new_id = new_id
        self.api_url = api_url
        """Where the lag API answers, for a link in the annotations."""
        self.routing_labels = dict(routing_labels or {})
        """`alerting.labels`: constant labels for Alertmanager's routing."""
        self.runbook_template = runbook_template
        self.open: dict[tuple[str, str], GroupIncident] = {}

    def update(self, statuses: Iterable[GroupStatus], now_ms: int) -> list[Transition]:
        out: list[Transition] = []
        seen: set[tuple[str, str]] = set()
        for status in statuses:
            key = (status.cluster, status.group)
            seen.add(key)
            out += self._step(key, status, now_ms)
        for key in [k for k in self.open if k not in seen]:  # the group is gone: nothing left to alert on
            incident = self.open.pop(key)
            out.append(Transition("close", *key, incident.severity, incident.id))
        return out

    def _step(self, key: tuple[str, str], status: GroupStatus, now_ms: int) -> list[Transition]:
        incident = self.open.get(key)
        s = status.status
        if s is Status.UNKNOWN:
            if incident is not None:
                incident.unknown_reason = status.reason
            return []
        if incident is None:
            if s < self.threshold:
                return []
            incident = self.open[key] = GroupIncident(self.new_id(), now_ms, s, status)
            return [Transition("open", *key, s, incident.id)]
        incident.unknown_reason = ""
        if s in (Status.OK, Status.NOTFOUND):
            del self.open[key]
            return [Transition("close", *key, incident.severity, incident.id)]
        incident.last = status
        if s != incident.severity:  # WARN <-> ERR: a new alert identity, same incident
            incident.severity = s
            return [Transition("severity", *key, s, incident.id)]
        return []

    def firing(self) -> list[Alert]:
        """One alert per open incident, with its latest content and the incident's start as startsAt."""
        return [self._alert(incident) for incident in self.open.values()]

    def labels(self, cluster: str, group: str, severity: Status) -> dict[str, str]:
        """Identity only: routing labels, alertname, severity, cluster, group."""
        return {
            **self.routing_labels,
            "alertname": ALERTNAME,
            "severity": SEVERITY_LABEL[severity],
            "cluster": cluster,
            "group": group,
        }

    def _alert(self, incident: GroupIncident) -> Alert:
        status = incident.last
        cluster, group = status.cluster, status.group
        labels = self.labels(cluster, group, incident.severity)
        annotations = {
            "summary": f"consumer group {group} on {cluster} is {status.status.name}",
            "status": status.status.name,
            "reason": status.reason,
            "totallag": str(status.totallag),
            "incident_id": incident.id,
        }
        if status.maxlag is not None:
            m = status.maxlag
            annotations["maxlag"] = f"{m.topic}[{m.partition}] {m.current_lag}"
        if status.lag_seconds is not None:
            annotations["lag_seconds"] = f"{status.lag_seconds:.1f}"
        if status.exact_lag_seconds is not None:
            annotations["exact_lag_seconds"] = f"{status.exact_lag_seconds:.1f}"
        if status.beyond_page_cache:
            annotations["page_cache"] = "lag reaches beyond the brokers' page cache: reads go to disk"
        if incident.unknown_reason:
            annotations["note"] = f"status unknown now ({incident.unknown_reason}); last known {status.status.name}"
        if self.api_url is not None:
            annotations["lag_url"] = f"{self.api_url}/v3/kafka/{cluster}/consumer/{group}/lag"
        if self.runbook_template:
            annotations["runbook_url"] = render_link(self.runbook_template, labels)
        return Alert(labels=labels, annotations=annotations, starts_at=_utc(incident.start_ms))


_SETTLED = (int(Status.OK), int(Status.NOTFOUND))
"""Statuses on which the book only closes an incident: it reads no more of the group than the status."""


def book_statuses(service: LagReader, now_ms: int) -> list[GroupStatus]:
    """Every group at `now_ms` in cluster then name order, as `all_statuses` gives them, except that an OK or
    NOTFOUND group is its status alone: objects (reasons, partitions) are built only for the groups an alert may
    carry, from one columnar pass over all (`scrape_rows`), under one hold of the lock as before."""
    out: list[GroupStatus] = []
    with service.locked():
        for rows in service.scrape_rows(now_ms):
            codes = rows.status.tolist()
            named = [name for name, code in zip(rows.names, codes, strict=True) if code not in _SETTLED]
            detailed = iter(service.group_statuses(rows.cluster, named, now_ms))
            for name, code in zip(rows.names, codes, strict=True):
                out.append(_settled(rows.cluster, name, Status(code)) if code in _SETTLED else next(detailed))
    return out


def _settled(cluster: str, group: str, status: Status) -> GroupStatus:
    return GroupStatus(cluster, group, status, 0.0, (), 0, None, 0, "")


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


class LagNotifier:
    """Every `interval_s`: evaluate every group, update the incident book, reconcile the open alerts and send."""

    def __init__(
        self, service: LagReader, book: IncidentBook, incidents: Incidents, sender: AlertSender, interval_s: float
    ) -> None:
        self.service = service
        self.book = book
        self.incidents = incidents
        self.sender = sender
        self.interval_s = interval_s
        self.loop = Periodic("lag-notifier", interval_s, self._cycle, fixed_rate=False, first_delay_s=interval_s)
        self.failures = 0
        """Cycles that raised (logged; the next cycle resends every open alert)."""
        self.last_success_s: float | None = None
        """Unix time the last cycle completed, alerts handed to the sender."""

    @classmethod
    def from_config(
        cls,
        service: LagReader,
        alerting: AlertingConfig,
        threshold: Status,
        interval_s: float,
        sender: AlertSender,
        api_url: str | None = None,
    ) -> LagNotifier:
        book = IncidentBook(
            threshold, api_url=api_url, routing_labels=alerting.labels, runbook_template=alerting.runbook_url
        )
        return cls(service, book, Incidents.from_config(alerting, interval_s), sender, interval_s)

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop(timeout_s=30)

    def _cycle(self) -> None:
        self.run_once()

    def run_once(self) -> list[Transition]:
        """One cycle, also when nothing fires (resolves and the sink's spool go out); never raises."""
        try:
            now_ms = self.service.clock_ms()
            transitions = self.book.update(book_statuses(self.service, now_ms), now_ms)
            for t in transitions:
                _LOG.info(
                    "lag incident %s %s: %s/%s %s", t.incident_id[:8], t.kind, t.cluster, t.group, t.severity.name
                )
            now = datetime.fromtimestamp(self.service.clock_ms() / 1000, tz=UTC)
            self.sender.send(self.incidents.reconcile(self.book.firing(), now))
        except Exception as exc:  # the sink spools; anything else must not stop the loop (next cycle resends all)
            self.failures += 1
            _LOG.error("lag notifier: cycle failed: %s: %s; retried next cycle", type(exc).__name__, exc)
            return []
        self.last_success_s = time.time()
        return transitions

    def is_alive(self) -> bool:
        """Whether its thread runs (False before `start` and after `stop`)."""
        return self.loop.is_alive()


class LagNotifierCollector(Collector):
    """The notifier's own health on the process's registry."""

    def __init__(self, notifier: LagNotifier) -> None:
        self.notifier = notifier

    def collect(self) -> Iterator[Metric]:
        n = self.notifier
        yield CounterMetricFamily(
            "kafka_pulse_lag_notifier_failures", "Notifier cycles that failed; the next cycle resends all.", n.failures
        )
        if n.last_success_s is not None:
            yield GaugeMetricFamily(
                "kafka_pulse_lag_notifier_last_success_timestamp_seconds",
                "Unix time of the notifier's last completed cycle.",
                n.last_success_s,
            )
