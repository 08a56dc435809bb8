"""slo/alerting.py: the job's alert states become Alertmanager alerts with identity-only labels
and numbers in annotations, opened, kept alive and resolved per cycle, and held (never resolved) when unknown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from pulse.alerts import Alert, Incidents, SendResult
from pulse.config import AlertingConfig
from slo.alerting import ALERTNAME, BurnCondition, SloAlertDelivery, SloAlertState, to_alert

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

PAGE = SloAlertState(
    slo="produce-availability",
    severity="page",
    firing=True,
    evaluated_at=T0,
    objective=99.9,
    window="30d",
    sli=0.9931,
    budget_remaining=0.873,
    burn_rates={"5m": 15.2, "1h": 14.9, "6h": None},
    conditions=(BurnCondition("1h", "5m", 14.4, "firing"), BurnCondition("6h", "30m", 6.0, "no_data")),
    exhaustion_at=datetime(2026, 3, 2, 1, 0, tzinfo=UTC),
    labels={"cluster": "prod-eu1"},
    description="Produce requests acknowledged",
)


def test_a_page_state_becomes_this_alertmanager_payload() -> None:
    """Golden payload: what Alertmanager receives for a firing page (times are set later by Incidents)."""
    alert = to_alert(PAGE, {"team": "kafka"}, "https://runbooks.example.com/{alertname}#{slo}")

    assert alert.to_api() == {
        "labels": {
            "team": "kafka",
            "cluster": "prod-eu1",
            "alertname": "KafkaSLOBurnRate",
            "severity": "page",
            "slo": "produce-availability",
        },
        "annotations": {
            "summary": "SLO produce-availability burns its error budget 14.9x too fast over 1h (page)",
            "description": "Produce requests acknowledged. Objective 99.9% over 30d, SLI 99.31%, 87.3% of the error "
            "budget left, exhausted at 2026-03-02T01:00:00Z at the current burn. "
            "Conditions: 1h/5m > 14.4x (firing); 6h/30m > 6x (no_data).",
            "objective": "99.9",
            "evaluated_at": "2026-03-01T12:00:00Z",
            "slo_window": "30d",
            "sli": "0.9931",
            "budget_remaining": "0.873",
            "exhaustion_at": "2026-03-02T01:00:00Z",
            "conditions": "1h/5m > 14.4x (firing); 6h/30m > 6x (no_data)",
            "burn_rate_5m": "15.2",
            "burn_rate_1h": "14.9",
            "burn_rate_6h": "no data",
            "runbook_url": "https://runbooks.example.com/KafkaSLOBurnRate#produce-availability",
        },
    }


def test_numbers_never_change_the_identity() -> None:
    later = replace(PAGE, burn_rates={"1h": 30.0}, budget_remaining=0.5, sli=0.98, evaluated_at=T0 + timedelta(hours=1))
    assert to_alert(later).labels == to_alert(PAGE).labels
    assert to_alert(later).annotations != to_alert(PAGE).annotations


def test_a_minimal_state_still_says_what_burns() -> None:
    bare = SloAlertState(slo="lag", severity="ticket", firing=True, evaluated_at=T0, objective=99.0)
    alert = to_alert(bare)
    assert alert.labels == {"alertname": ALERTNAME, "severity": "ticket", "slo": "lag"}
    assert alert.annotations["summary"] == "SLO lag burns its error budget too fast (ticket)"
    assert "runbook_url" not in alert.annotations


def test_a_per_slo_runbook_wins_and_odd_window_names_become_annotation_names() -> None:
    state = replace(PAGE, runbook_url="https://wiki.example.com/produce", burn_rates={"1.5h": 2.0})
    alert = to_alert(state, runbook_template="https://runbooks.example.com/{slo}")
    assert alert.annotations["runbook_url"] == "https://wiki.example.com/produce"
    assert alert.annotations["burn_rate_1_5h"] == "2"


@pytest.mark.parametrize("label", ["slo", "severity", "alertname"])
def test_an_slo_label_that_would_overwrite_identity_is_refused(label: str) -> None:
    with pytest.raises(ValueError, match=f"SLO 'produce-availability': label '{label}' is set by kafka-pulse"):
        to_alert(replace(PAGE, labels={label: "x"}))


# --- delivery, cycle by cycle -------------------------------------------------------------------------------------


@dataclass
class RecordingSender:
    batches: list[list[Alert]] = field(default_factory=list)

    def send(self, alerts: Sequence[Alert]) -> SendResult:
        self.batches.append(list(alerts))
        return SendResult(delivered=len(alerts), spooled=0)


def state(slo: str, firing: bool | None, severity: str = "page", **labels: str) -> SloAlertState:
    return replace(PAGE, slo=slo, firing=firing, severity=severity, labels=labels)  # type: ignore[arg-type]


def summary(batch: list[Alert], now: datetime) -> dict[str, str]:
    """{slo/severity[/instance]: "firing" | "resolved"} for one posted batch."""
    out = {}
    for a in batch:
        key = "/".join(
            [a.labels["slo"], a.labels["severity"], *(a.labels.get(k, "") for k in ("topic",) if k in a.labels)]
        )
        out[key] = "resolved" if a.is_resolved(now) else "firing"
    return out


@dataclass(frozen=True)
class Cycle:
    states: tuple[SloAlertState, ...]
    want: dict[str, str]
    """What the cycle posts: key -> firing/resolved."""


CASES = [
    pytest.param(
        [Cycle((state("a", True),), {"a/page": "firing"}), Cycle((state("a", False),), {"a/page": "resolved"})],
        id="fire-then-resolve",
    ),
    pytest.param(
        [Cycle((state("a", True),), {"a/page": "firing"}), Cycle((state("a", None),), {"a/page": "firing"})],
        id="unknown-holds: a source down gives no verdict, the page stays open",
    ),
    pytest.param(
        [
            Cycle((state("a", True), state("b", False)), {"a/page": "firing"}),
            Cycle((state("b", False),), {"a/page": "firing"}),
        ],
        id="missing-slo-holds: an SLO absent from the job's output is not resolved",
    ),
    pytest.param(
        [
            Cycle((state("a", True), state("a", True, "ticket")), {"a/page": "firing", "a/ticket": "firing"}),
            Cycle((state("a", False), state("a", True, "ticket")), {"a/page": "resolved", "a/ticket": "firing"}),
        ],
        id="tiers-independent: the page resolves first, the slower ticket stays",
    ),
    pytest.param(
        [
            Cycle(
                (state("a", True, topic="t1"), state("a", True, topic="t2")),
                {"a/page/t1": "firing", "a/page/t2": "firing"},
            ),
            Cycle(
                (state("a", False, topic="t1"), state("a", None, topic="t2")),
                {"a/page/t2": "firing", "a/page/t1": "resolved"},
            ),
        ],
        id="instances: group_by values are separate alerts; one unknown instance is held",
    ),
    pytest.param(
        [Cycle((state("a", False),), {}), Cycle((state("a", None),), {})],
        id="quiet: nothing fired, nothing is posted",
    ),
]


@pytest.mark.parametrize("cycles", CASES)
def test_delivery_cycles(cycles: list[Cycle]) -> None:
    sender = RecordingSender()
    delivery = SloAlertDelivery(sender, Incidents(resend_interval_s=60, resolved_retention_s=0))
    for index, cycle in enumerate(cycles):
        now = T0 + timedelta(minutes=index)
        delivery.deliver(cycle.states, now)
        assert summary(sender.batches[-1], now) == cycle.want, f"cycle {index}"


def test_delivery_keeps_the_incident_start_and_moves_ends_at() -> None:
    sender = RecordingSender()
    delivery = SloAlertDelivery.from_config(
        AlertingConfig(resend_interval_s=30, keepalive_cycles=4, labels={"env": "prod"}),
        sink=sender,
        cycle_s=60,
    )
    delivery.deliver([PAGE], T0)
    delivery.deliver([replace(PAGE, burn_rates={"1h": 20.0})], T0 + timedelta(minutes=1))

    second = sender.batches[1][0]
    assert second.labels["env"] == "prod"
    assert second.starts_at == T0
    assert second.ends_at == T0 + timedelta(minutes=1) + timedelta(minutes=4)  # 4 x max(resend 30 s, cycle 60 s)
    assert second.annotations["burn_rate_1h"] == "20"
