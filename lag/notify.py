"""Notifications: one incident per consumer group, opened when its status reaches the configured severity and
resolved when it is OK again, sent as Alertmanager v2 alerts through an `AlertSender` (the suite's alert sink).

Burrow's notifier model (research §1.9): an incident gets an id and a start when a group first goes above OK at or
past the threshold; while it lasts it is re-sent every `resend_s` (Burrow's `send-interval`; for Alertmanager also
what keeps a firing alert from timing out); the close goes out when the group is OK again. Ours also: the alert's
`severity` label follows the group's status while the incident lasts (WARN -> warning, ERR -> critical; a change
resolves the old alert and fires the new one, because labels are the alert's identity); an UNKNOWN group (its
cluster is unreachable) neither opens nor closes anything, and its open incident keeps firing with "unknown" in
its annotations; a group that disappears (deleted, expired) is resolved. `IncidentBook` is pure; `LagNotifier`
runs it on a timer.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from lag.service import LagService
from lag.status import GroupStatus, Status

_LOG = logging.getLogger(__name__)
ALERTNAME = "KafkaConsumerGroupUnhealthy"
SEVERITY_LABEL = {Status.WARN: "warning", Status.ERR: "critical"}


@dataclass(frozen=True, slots=True)
class LagAlert:
    """One Alertmanager v2 alert: labels carry identity only, numbers and words go in annotations."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    starts_at_ms: int
    ends_at_ms: int | None = None
    """Set (to the resolution time, i.e. now, which is in the past when Alertmanager reads it) to resolve."""

    @property
    def firing(self) -> bool:
        return self.ends_at_ms is None


class AlertSender(Protocol):
    """Delivers alerts, in order; expected to keep them (spool) while the destination is down, never to raise."""

    def send(self, alerts: Sequence[LagAlert]) -> None: ...


@dataclass
class Incident:
    """An open incident of one group."""

    id: str
    start_ms: int
    severity: Status
    """WARN or ERR: the status whose alert is firing."""
    last_sent_ms: int
    last: GroupStatus
    """The latest known verdict (before UNKNOWN, if the cluster went away)."""


class IncidentBook:
    """Incidents by (cluster, group); `update` takes every group's latest status and returns the alerts to send."""

    def __init__(
        self,
        threshold: Status = Status.ERR,
        resend_s: float = 60.0,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        api_url: str | None = None,
    ) -> None:
        if threshold not in (Status.WARN, Status.ERR):
            raise ValueError(f"threshold must be WARN or ERR, got {threshold.name}")
        self.threshold = threshold
        self.resend_ms = round(resend_s * 1000)
        self.new_id = new_id
        self.api_url = api_url
        """Where the lag API answers, for a link in the annotations."""
        self.open: dict[tuple[str, str], Incident] = {}

    def update(self, statuses: Iterable[GroupStatus], now_ms: int) -> list[LagAlert]:
        out: list[LagAlert] = []
        seen: set[tuple[str, str]] = set()
        for status in statuses:
            key = (status.cluster, status.group)
            seen.add(key)
            out += self._step(key, status, now_ms)
        for key in [k for k in self.open if k not in seen]:  # the group is gone: nothing left to alert on
            incident = self.open.pop(key)
            out.append(self._alert(incident, incident.last, now_ms, ends_at_ms=now_ms, note="group no longer tracked"))
        return out

    def _step(self, key: tuple[str, str], status: GroupStatus, now_ms: int) -> list[LagAlert]:
        incident = self.open.get(key)
        s = status.status
        if s is Status.UNKNOWN:
            if incident is not None and now_ms - incident.last_sent_ms >= self.resend_ms:
                incident.last_sent_ms = now_ms
                return [self._alert(incident, incident.last, now_ms, note=f"status unknown now: {status.reason}")]
            return []
        if incident is None:
            if s < self.threshold:
                return []
            incident = Incident(self.new_id(), now_ms, s, now_ms, status)
            self.open[key] = incident
            return [self._alert(incident, status, now_ms)]
        if s in (Status.OK, Status.NOTFOUND):
            del self.open[key]
            return [self._alert(incident, status, now_ms, ends_at_ms=now_ms)]
        incident.last = status
        if s != incident.severity:  # WARN <-> ERR: a new alert identity
            old = self._alert(incident, status, now_ms, ends_at_ms=now_ms, note=f"now {s.name}")
            incident.severity, incident.last_sent_ms = s, now_ms
            return [old, self._alert(incident, status, now_ms)]
        if now_ms - incident.last_sent_ms >= self.resend_ms:
            incident.last_sent_ms = now_ms
            return [self._alert(incident, status, now_ms)]
        return []

    def _alert(
        self, incident: Incident, status: GroupStatus, now_ms: int, ends_at_ms: int | None = None, note: str = ""
    ) -> LagAlert:
        cluster, group = status.cluster, status.group
        labels = {
            "alertname": ALERTNAME,
            "severity": SEVERITY_LABEL[incident.severity],
            "cluster": cluster,
            "group": group,
        }
        annotations = {
            "summary": f"consumer group {group} on {cluster} is {status.status.name}",
            "status": status.status.name,
            "reason": status.reason,
            "totallag": str(status.totallag),
            "incident_id": incident.id,
            "incident_start": _iso(incident.start_ms),
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
        if note:
            annotations["note"] = note
        if self.api_url is not None:
            annotations["lag_url"] = f"{self.api_url}/v3/kafka/{cluster}/consumer/{group}/lag"
        return LagAlert(labels, annotations, incident.start_ms, ends_at_ms)


def alertmanager_json(alert: LagAlert) -> dict[str, object]:
    """The alert as one element of Alertmanager's `POST /api/v2/alerts` body."""
    body: dict[str, object] = {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "startsAt": _iso(alert.starts_at_ms),
    }
    if alert.ends_at_ms is not None:
        body["endsAt"] = _iso(alert.ends_at_ms)
    return body


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LagNotifier:
    """Every `interval_s`: evaluate every group, update the incident book, hand the alerts to the sender."""

    def __init__(self, service: LagService, book: IncidentBook, sender: AlertSender, interval_s: float) -> None:
        self.service = service
        self.book = book
        self.sender = sender
        self.interval_s = interval_s
        self.sent_total = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="lag-notifier", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.run_once()

    def run_once(self) -> int:
        """One round; returns the number of alerts handed over. A failing sender is logged, never fatal."""
        alerts = self.book.update(self.service.all_statuses(), self.service.clock_ms())
        if alerts:
            try:
                self.sender.send(alerts)
            except Exception as exc:  # the sender should spool; if it raises anyway, the loop must go on
                _LOG.warning("lag notifier: %d alert(s) not handed over: %s", len(alerts), exc)
                return 0
            self.sent_total += len(alerts)
        return len(alerts)
