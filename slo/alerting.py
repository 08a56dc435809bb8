"""From the burn-rate job's alert states to Alertmanager: each cycle, `SloAlertState`s become `Alert`s (identity in
labels, numbers in annotations), `Incidents` keeps them open or resolves them, and the `AlertSink` delivers them.

Input contract (what the job hands over; one `SloAlertState` per SLO instance and severity, every cycle):

    SloAlertState(
        slo="produce-availability",       # SLO name                            -> label `slo`
        severity="page",                  # "page" | "ticket"                   -> label `severity`
        firing=True,                      # True | False | None (unknown: not evaluated this cycle)
        evaluated_at=<aware datetime>,    # the evaluation time (`--at`)
        objective=99.9,                   # percent
        window="30d",                     # the SLO period as written in the spec ("30d", "1M Europe/Berlin")
        sli=0.9931,                       # ratio over the period, None without events
        budget_remaining=0.873,           # fraction of the period's budget left (1 untouched, < 0 overspent)
        burn_rates={"5m": 15.2, "1h": 14.9, "6h": None, ...},   # None = no data in that window
        conditions=(BurnCondition("1h", "5m", 14.4, "firing"), BurnCondition("6h", "30m", 6.0, "ok")),
        exhaustion_at=<aware datetime> | None,
        labels={"cluster": "prod-eu1"},   # SLO labels and group_by values: identity, constant per instance
        description="Produce requests acknowledged",   # optional, from the spec
        runbook_url=None,                 # optional per-SLO link; else alerting.runbook_url's template
    )

`firing=None` holds an open alert as it is (never resolves it): a source that is down gives no verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pulse.alerts import Alert, AlertSender, Incidents, SendResult, identity, render_link
from pulse.config import AlertingConfig

ALERTNAME = "KafkaSLOBurnRate"
"""One alert name for both tiers (as Sloth does); `severity` tells page from ticket, so the example
Alertmanager config can inhibit an SLO's ticket while its page fires."""

RESERVED_LABELS = frozenset({"alertname", "severity", "slo"})
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class BurnCondition:
    """One multiwindow condition of an alert tier: fires when both windows burn faster than `factor`."""

    long: str
    """Window label as in `burn_rates`, e.g. "1h"."""
    short: str
    """e.g. "5m"."""
    factor: float
    """Burn-rate threshold, e.g. 14.4."""
    state: str | None = None
    """The job's verdict for this pair: "firing", "ok", "no_data", "low_traffic" (None if not reported)."""


@dataclass(frozen=True)
class SloAlertState:
    """One SLO instance's alert tier as the burn-rate job evaluated it; see the module docstring."""

    slo: str
    severity: Literal["page", "ticket"]
    firing: bool | None
    """None: unknown this cycle (evaluation failed, source down); an open alert is held, never resolved."""
    evaluated_at: datetime
    objective: float
    """Percent, e.g. 99.9."""
    window: str = ""
    """The SLO period as the spec writes it: "30d", "1M Europe/Berlin"."""
    sli: float | None = None
    budget_remaining: float | None = None
    """Fraction of the period's error budget left: 1 untouched, 0 exhausted, negative overspent."""
    burn_rates: Mapping[str, float | None] = field(default_factory=dict)
    """Burn rate per window label ("5m", "1h", ...); None when the window holds no events."""
    conditions: tuple[BurnCondition, ...] = ()
    exhaustion_at: datetime | None = None
    """When the budget runs out at the current burn; None when it does not within the forecast."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """SLO labels and group_by values; identity, so constant per instance (never numbers)."""
    description: str | None = None
    runbook_url: str | None = None


def _number(value: float) -> str:
    return f"{value:.6g}"


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def alert_labels(state: SloAlertState, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Identity labels: alertname, severity, slo, the SLO's own labels, then `alerting.labels` (for routing)."""
    clash = sorted(RESERVED_LABELS & set(state.labels))
    if clash:
        raise ValueError(f"SLO {state.slo!r}: label {clash[0]!r} is set by kafka-pulse; rename it in the spec")
    return {**(extra or {}), **state.labels, "alertname": ALERTNAME, "severity": state.severity, "slo": state.slo}


def alert_annotations(state: SloAlertState, labels: Mapping[str, str], runbook_template: str | None) -> dict[str, str]:
    """Numbers and text: summary, description, burn rates per window, budget, exhaustion, runbook."""
    firing = [c for c in state.conditions if c.state == "firing"] or list(state.conditions)
    lead_rate = state.burn_rates.get(firing[0].long) if firing else None
    pace = f"{lead_rate:.1f}x too fast over {firing[0].long}" if firing and lead_rate is not None else "too fast"
    summary = f"SLO {state.slo} burns its error budget {pace} ({state.severity})"
    facts = [f"Objective {_number(state.objective)}%" + (f" over {state.window}" if state.window else "")]
    if state.sli is not None:
        facts.append(f"SLI {state.sli * 100:.4g}%")
    if state.budget_remaining is not None:
        facts.append(f"{state.budget_remaining * 100:.3g}% of the error budget left")
    if state.exhaustion_at is not None:
        facts.append(f"exhausted at {_time(state.exhaustion_at)} at the current burn")
    conditions = "; ".join(
        f"{c.long}/{c.short} > {_number(c.factor)}x" + (f" ({c.state})" if c.state else "") for c in state.conditions
    )
    description = (state.description + ". " if state.description else "") + ", ".join(facts) + "."
    if conditions:
        description += f" Conditions: {conditions}."
    annotations = {
        "summary": summary,
        "description": description,
        "objective": _number(state.objective),
        "evaluated_at": _time(state.evaluated_at),
    }
    if state.window:
        annotations["slo_window"] = state.window
    if state.sli is not None:
        annotations["sli"] = _number(state.sli)
    if state.budget_remaining is not None:
        annotations["budget_remaining"] = _number(state.budget_remaining)
    if state.exhaustion_at is not None:
        annotations["exhaustion_at"] = _time(state.exhaustion_at)
    if conditions:
        annotations["conditions"] = conditions
    for window, rate in state.burn_rates.items():
        annotations[f"burn_rate_{_NOT_IN_NAME.sub('_', window)}"] = "no data" if rate is None else _number(rate)
    runbook = state.runbook_url or (render_link(runbook_template, labels) if runbook_template else None)
    if runbook:
        annotations["runbook_url"] = runbook
    return annotations


def to_alert(
    state: SloAlertState, extra_labels: Mapping[str, str] | None = None, runbook_template: str | None = None
) -> Alert:
    """The Alertmanager alert for one state (without times: `Incidents` sets startsAt and endsAt)."""
    labels = alert_labels(state, extra_labels)
    return Alert(labels=labels, annotations=alert_annotations(state, labels, runbook_template))


class SloAlertDelivery:
    """Each cycle: the job's states -> firing alerts -> `Incidents.reconcile` -> `AlertSender.send`.

    Open alerts of an SLO that was evaluated and is no longer firing are resolved; those whose state is unknown
    (`firing=None`, or an SLO missing from this cycle) are held open and resent unchanged.
    """

    def __init__(
        self,
        sender: AlertSender,
        incidents: Incidents,
        extra_labels: Mapping[str, str] | None = None,
        runbook_template: str | None = None,
    ) -> None:
        self.sender = sender
        self.incidents = incidents
        self.extra_labels = dict(extra_labels or {})
        self.runbook_template = runbook_template

    @classmethod
    def from_config(cls, config: AlertingConfig, sink: AlertSender, cycle_s: float) -> SloAlertDelivery:
        """Delivery for a job that runs every `cycle_s` (`slo.schedule_s`)."""
        return cls(sink, Incidents.from_config(config, cycle_s), config.labels, config.runbook_url)

    def deliver(self, states: Sequence[SloAlertState], now: datetime) -> SendResult:
        """Post this cycle's alerts; call it every cycle, also when nothing fires (resolves and the spool go out)."""
        firing = [to_alert(s, self.extra_labels, self.runbook_template) for s in states if s.firing]
        evaluated = {s.slo for s in states if s.firing is not None}
        unknown = {identity(alert_labels(s, self.extra_labels)) for s in states if s.firing is None}

        def closable(labels: Mapping[str, str]) -> bool:
            return labels.get("slo") in evaluated and identity(labels) not in unknown

        return self.sender.send(self.incidents.reconcile(firing, now, scope=closable))
