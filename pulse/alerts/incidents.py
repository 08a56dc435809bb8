"""Which alerts one component has open (`Incidents`), and what to post each cycle to keep Alertmanager in step:
open alerts resent with a moving `endsAt`, recent resolves resent for a while. Pure: the clock is an argument."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from pulse.alerts.message import Alert, Identity, identity
from pulse.config import AlertingConfig


@dataclass
class _Incident:
    alert: Alert
    """The latest content, with the incident's startsAt."""
    resolved_at: datetime | None = None


class Incidents:
    """The alerts one component has open, and what to post each cycle to keep Alertmanager in step.

    Alertmanager resolves a firing alert by itself once its `endsAt` passes, so an open alert is resent every
    cycle with `endsAt = now + keepalive_cycles x resend_interval_s` (Prometheus sends 4 x its resend delay).
    If this process dies, its alerts resolve that long after the last cycle. A closed alert is resent with its
    `endsAt` for `resolved_retention_s`, so an Alertmanager that missed the resolve still gets it. Pure: the clock
    is an argument; nothing here does I/O.
    """

    def __init__(
        self, resend_interval_s: float, keepalive_cycles: int = 4, resolved_retention_s: float = 300.0
    ) -> None:
        """`resend_interval_s` must be at least the caller's cycle: a slower caller would let its alerts expire."""
        if resend_interval_s <= 0:
            raise ValueError(f"resend_interval_s must be > 0, got {resend_interval_s!r}")
        if keepalive_cycles < 2:
            raise ValueError(
                f"keepalive_cycles must be >= 2 (one late cycle must not resolve), got {keepalive_cycles!r}"
            )
        if resolved_retention_s < 0:
            raise ValueError(f"resolved_retention_s must be >= 0, got {resolved_retention_s!r}")
        self.lifetime = timedelta(seconds=resend_interval_s * keepalive_cycles)
        self.retention = timedelta(seconds=resolved_retention_s)
        self._open: dict[Identity, _Incident] = {}
        self._resolved: dict[Identity, _Incident] = {}

    @classmethod
    def from_config(cls, config: AlertingConfig, cycle_s: float = 0.0) -> Incidents:
        """Incidents for a component that runs every `cycle_s` (the resend interval is at least that)."""
        return cls(max(config.resend_interval_s, cycle_s), config.keepalive_cycles, config.resolved_retention_s)

    def open(self, alert: Alert, now: datetime) -> Alert:
        """Open an incident, or update the annotations of the open one (its startsAt is kept); returns what to post."""
        key = alert.identity
        current = self._open.get(key)
        starts_at = current.alert.starts_at if current is not None else (alert.starts_at or now)
        # A resolve of an earlier incident must not be resent after this one opened: Alertmanager would take it
        # as the latest state of these labels.
        self._resolved.pop(key, None)
        incident = _Incident(alert.model_copy(update={"starts_at": starts_at, "ends_at": None}))
        self._open[key] = incident
        return self._firing(incident, now)

    def close(self, labels: Mapping[str, str], now: datetime) -> Alert | None:
        """Resolve the open incident with these labels (None if none is open); returns the resolving alert."""
        key = identity({k: v for k, v in labels.items() if v != ""})
        incident = self._open.pop(key, None)
        if incident is None:
            return None
        incident.resolved_at = now
        self._resolved[key] = incident
        return self._closed(incident)

    def refresh(self, now: datetime) -> list[Alert]:
        """Every alert to post this cycle: open ones with a fresh `endsAt`, then recent resolves."""
        expired = [key for key, i in self._resolved.items() if now - (i.resolved_at or now) > self.retention]
        for key in expired:
            del self._resolved[key]
        return [self._firing(i, now) for i in self._open.values()] + [self._closed(i) for i in self._resolved.values()]

    def reconcile(
        self, firing: Iterable[Alert], now: datetime, scope: Callable[[Mapping[str, str]], bool] | None = None
    ) -> list[Alert]:
        """Make `firing` the open set and return what to post this cycle.

        Open incidents absent from `firing` are closed if `scope` (default: all) accepts their labels; the others
        are held open and refreshed. Pass a scope of what was actually evaluated this cycle, so an SLO or a group
        whose state is unknown (source down) is never reported resolved.
        """
        seen: set[Identity] = set()
        for alert in firing:
            self.open(alert, now)
            seen.add(alert.identity)
        for key, incident in list(self._open.items()):
            if key not in seen and (scope is None or scope(incident.alert.labels)):
                self.close(incident.alert.labels, now)
        return self.refresh(now)

    def is_open(self, labels: Mapping[str, str]) -> bool:
        return identity(labels) in self._open

    @property
    def open_alerts(self) -> list[Alert]:
        """The open incidents' latest content (without endsAt)."""
        return [i.alert for i in self._open.values()]

    def _firing(self, incident: _Incident, now: datetime) -> Alert:
        return incident.alert.model_copy(update={"ends_at": now + self.lifetime})

    @staticmethod
    def _closed(incident: _Incident) -> Alert:
        return incident.alert.model_copy(update={"ends_at": incident.resolved_at})
