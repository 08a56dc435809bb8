"""What an evaluation or a backtest yields per SLO instance, and its JSON shape (the `slo evaluate|backtest` contract).

Alert states here are the input of slo/alerting.py (Alertmanager delivery) and of the Pushgateway gauges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from slo.alerting import BurnCondition, SloAlertState


def iso(moment: datetime | None) -> str | None:
    """UTC, seconds precision, `Z` suffix: `2024-03-01T12:00:00Z`."""
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class PairResult:
    """One long/short window pair at the evaluation time."""

    long: str
    short: str
    factor: float
    threshold: float
    """Error ratio both windows must exceed (factor x budget)."""
    burn_rate_long: float | None
    burn_rate_short: float | None
    state: str
    """`firing`, `ok`, `no_data` (a window without events) or `low_traffic` (long window below `min_events`)."""


@dataclass(frozen=True)
class AlertResult:
    """A severity tier: firing when any of its pairs fires."""

    severity: str
    firing: bool
    pairs: tuple[PairResult, ...]


@dataclass(frozen=True)
class SloResult:
    """One SLO instance (one per `group_by` value) at one evaluation time."""

    name: str
    labels: dict[str, str]
    """The spec's labels plus the `group_by` values of this instance."""
    objective: float
    window: str
    at: datetime
    period_start: datetime
    period_end: datetime | None
    """End of a calendar period; None for rolling windows."""
    good: float
    total: float
    sli: float | None
    """good / total over the period; None without events ("no data")."""
    budget_consumed: float | None
    budget_remaining: float | None
    """1 - consumed; negative when overspent; None without events."""
    burn_rates: dict[str, float | None]
    alerts: tuple[AlertResult, ...]
    exhaustion_at: datetime | None
    """When the budget runs out if the forecast-window rates go on (rolling windows let old errors leave)."""
    projected_sli: float | None
    projected_at: datetime | None
    """Calendar: the period end. Rolling: one window length ahead, when the window holds only projected events."""
    forecast_window: str
    budgeting: str
    skipped_rows: dict[str, int] = field(default_factory=dict)
    """Malformed source rows counted and skipped, by reason: `null_time`, `bad_value`, `good_exceeds_total`."""
    repeated_label_sets: int = 0
    """Other results of this evaluation with this one's name and labels, refused (never published twice) and
    counted here; not in `to_json`. Exported as `kafka_pulse_slo_schedule_refused_results_total` by `run`."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "labels": self.labels,
            "objective": self.objective,
            "window": self.window,
            "at": iso(self.at),
            "period_start": iso(self.period_start),
            "period_end": iso(self.period_end),
            "budgeting": self.budgeting,
            "good": self.good,
            "total": self.total,
            "sli": self.sli,
            "budget_consumed": self.budget_consumed,
            "budget_remaining": self.budget_remaining,
            "burn_rates": self.burn_rates,
            "alerts": [
                {
                    "severity": a.severity,
                    "firing": a.firing,
                    "pairs": [p.__dict__ for p in a.pairs],
                }
                for a in self.alerts
            ],
            "exhaustion_at": iso(self.exhaustion_at),
            "forecast_window": self.forecast_window,
            "projected_sli": self.projected_sli,
            "projected_at": iso(self.projected_at),
            "skipped_rows": self.skipped_rows,
        }


@dataclass(frozen=True)
class Interval:
    """A stretch of backtest steps in which an alert fired: [start, end), end None when still firing at `--to`."""

    severity: str
    start: datetime
    end: datetime | None


@dataclass(frozen=True)
class BacktestResult:
    name: str
    labels: dict[str, str]
    alerts: tuple[Interval, ...]
    skipped_rows: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "labels": self.labels,
            "alerts": [{"severity": i.severity, "start": iso(i.start), "end": iso(i.end)} for i in self.alerts],
            "skipped_rows": self.skipped_rows,
        }


def alert_states(results: Sequence[SloResult], descriptions: Mapping[str, str] | None = None) -> list[SloAlertState]:
    """The hand-over to slo/alerting.py: one `SloAlertState` per SLO instance and severity with pairs."""
    states: list[SloAlertState] = []
    for r in results:
        for alert in r.alerts:
            severity: Literal["page", "ticket"] = "page" if alert.severity == "page" else "ticket"
            states.append(
                SloAlertState(
                    slo=r.name,
                    severity=severity,
                    firing=alert.firing,
                    evaluated_at=r.at,
                    objective=r.objective,
                    window=r.window,
                    sli=r.sli,
                    budget_remaining=r.budget_remaining,
                    burn_rates=dict(r.burn_rates),
                    conditions=tuple(BurnCondition(p.long, p.short, p.factor, p.state) for p in alert.pairs),
                    exhaustion_at=r.exhaustion_at,
                    labels=dict(r.labels),
                    description=(descriptions or {}).get(r.name) or None,
                )
            )
    return states
