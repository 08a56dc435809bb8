"""Alert delivery end to end: SLO alert states -> AlertSink -> a real Alertmanager running examples/alertmanager.yml ->
the local PagerDuty Events v2 stand-in and ticket webhook.

The outage tests drive the delivery cycle as the SLO job does (one `deliver` per cycle), with a short cycle so a
multi-cycle outage fits in seconds: 10 cycles of 2 s with endsAt 4 cycles ahead is a harsher case than an Alertmanager
down for 2 minutes at a 60 s cycle (2 cycles, endsAt 4 cycles ahead), since the spooled keep-alives expire before
delivery. `run_cycles` and `example_alertmanager.outage()` are the pieces for the Spark end-to-end test.
"""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack.alertmanager import Alertmanager
from pulse.alerts import AlertSink, Incidents, utc_now
from pulse.ports import wait_until
from slo.alerting import BurnCondition, SloAlertDelivery, SloAlertState
from tests.fixtures.services import (
    EXAMPLE_ALERTMANAGER_CONFIG,
    PAGERDUTY_TEST_KEY,
    pagerduty_event,
    run_cycles,
    ticket_notification,
)
from tests.support.receiver import HttpReceiver

pytestmark = pytest.mark.integration

CYCLE_S = 2.0
"""The delivery cycle here (the SLO job's `slo.schedule_s` is 60 s by default)."""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def slo_states(page: Iterable[str], ticket: Iterable[str] = (), quiet: Iterable[str] = ()) -> list[SloAlertState]:
    """Alert states as the burn-rate job reports them: the named SLOs' page or ticket tier firing, `quiet` SLOs
    evaluated and not firing (both tiers)."""
    now = utc_now()

    def state(slo: str, severity: str, firing: bool) -> SloAlertState:
        return SloAlertState(
            slo=slo,
            severity=severity,  # type: ignore[arg-type]
            firing=firing,
            evaluated_at=now,
            objective=99.9,
            window="30d",
            sli=0.95 if firing else 0.9995,
            budget_remaining=0.62 if firing else 0.98,
            burn_rates={"5m": 50.0, "1h": 20.0} if firing else {"5m": 0.0, "1h": 0.1},
            conditions=(BurnCondition("1h", "5m", 14.4, "firing" if firing else "ok"),),
            labels={"cluster": "local"},
        )

    page, ticket, quiet = set(page), set(ticket), set(quiet)
    states = [state(s, "page", True) for s in sorted(page)] + [state(s, "ticket", True) for s in sorted(ticket)]
    states += [state(s, "page", False) for s in sorted((ticket | quiet) - page)]
    states += [state(s, "ticket", False) for s in sorted((page | quiet) - ticket)]
    return states


def deliver_until_drained(
    delivery: SloAlertDelivery, sink: AlertSink, states: Callable[[], list[SloAlertState]]
) -> None:
    """Keep cycling until a cycle leaves nothing in the spool (the first cycle after a restart may still be
    inside the sink's retry pause)."""
    drained = wait_until(lambda: delivery.deliver(states(), utc_now()).spooled == 0, 60, interval_s=CYCLE_S)
    assert drained, f"spool not drained: {len(sink.pending())} alerts still waiting"


def dedup(event: dict[str, Any]) -> str:
    key = event["dedup_key"]
    assert isinstance(key, str) and len(key) == 64 and int(key, 16) >= 0  # sha256 hex of the group key
    return key


@pytest.fixture
def sink(example_alertmanager: Alertmanager, tmp_path: Path) -> Iterator[AlertSink]:
    with AlertSink(example_alertmanager.url, tmp_path / "spool", timeout_s=2.0, retry_after_s=1.0) as sink:
        yield sink


def test_the_example_config_passes_amtool_and_routes_by_severity() -> None:
    subprocess.run(["amtool", "check-config", str(EXAMPLE_ALERTMANAGER_CONFIG)], check=True, capture_output=True)

    def receiver(*labels: str) -> str:
        argv = ["amtool", "config", "routes", "test", f"--config.file={EXAMPLE_ALERTMANAGER_CONFIG}", *labels]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()

    assert receiver("alertname=KafkaSLOBurnRate", "severity=page", "slo=produce") == "kafka-pagerduty"
    assert receiver("alertname=KafkaSLOBurnRate", "severity=ticket", "slo=produce") == "kafka-tickets"
    assert receiver("alertname=SomethingElse") == "kafka-tickets"  # unmatched alerts still reach a human


def test_a_page_triggers_pagerduty_inhibits_its_ticket_and_resolves_with_the_same_dedup_key(
    example_alertmanager: Alertmanager, http_receiver: HttpReceiver, sink: AlertSink
) -> None:
    slo = unique("produce")
    delivery = SloAlertDelivery(sink, Incidents(resend_interval_s=CYCLE_S))
    mark = http_receiver.mark()

    delivery.deliver(slo_states(page=[slo], ticket=[slo]), utc_now())

    trigger = pagerduty_event(http_receiver, "trigger", slo, after=mark)
    assert trigger["routing_key"] == PAGERDUTY_TEST_KEY  # read from the example's routing_key_file
    assert trigger["payload"]["severity"] == "critical"
    assert trigger["payload"]["summary"] == f"SLO {slo} burns its error budget 20.0x too fast over 1h (page)"
    assert trigger["payload"]["custom_details"]["budget_remaining"] == "0.62"
    assert trigger["payload"]["custom_details"]["cluster"] == "local"

    def ticket_status() -> dict[str, Any]:
        held = [a for a in example_alertmanager.alerts() if a["labels"] == {**a["labels"], "slo": slo}]
        return {a["labels"]["severity"]: a["status"] for a in held}

    statuses = wait_until(lambda: ticket_status().get("ticket", {}).get("state") == "suppressed", 30)
    assert statuses, f"the ticket is not inhibited by the page: {ticket_status()}"
    assert ticket_status()["ticket"]["inhibitedBy"]

    mark_resolve = http_receiver.mark()
    delivery.deliver(slo_states(page=[], ticket=[slo]), utc_now())  # the page stops; the slower ticket stays

    resolve = pagerduty_event(http_receiver, "resolve", slo, after=mark_resolve)
    assert dedup(resolve) == dedup(trigger)
    ticket = ticket_notification(http_receiver, "firing", slo, after=mark_resolve)  # no longer inhibited
    assert ticket["commonLabels"]["severity"] == "ticket"
    assert sink.stats.failed == 0 and sink.stats.spooled == 0


def test_alertmanager_crashing_mid_incident_loses_no_alert(
    example_alertmanager: Alertmanager, http_receiver: HttpReceiver, sink: AlertSink
) -> None:
    old, new, slow = unique("old"), unique("new"), unique("slow")
    delivery = SloAlertDelivery(sink, Incidents(resend_interval_s=CYCLE_S, keepalive_cycles=4))
    mark = http_receiver.mark()
    delivery.deliver(slo_states(page=[old]), utc_now())
    first_old = pagerduty_event(http_receiver, "trigger", old, after=mark)

    def during(k: int) -> list[SloAlertState]:
        """Cycle k of the outage: `old` keeps paging, `new` starts paging at 2, `slow` opens a ticket at 4."""
        return slo_states(page=[old] + ([new] if k >= 2 else []), ticket=[slow] if k >= 4 else [], quiet=[new, slow])

    mark_outage = http_receiver.mark()
    with example_alertmanager.outage(signal.SIGKILL):
        results = run_cycles(10 * CYCLE_S, CYCLE_S, lambda k: delivery.deliver(during(k), utc_now()))
        assert all(r.delivered == 0 for r in results)
        waiting = {(a.labels["slo"], a.labels["severity"]) for a in sink.pending()}
        assert {(old, "page"), (new, "page"), (slow, "ticket")} <= waiting

    deliver_until_drained(delivery, sink, lambda: during(10))

    trigger_new = pagerduty_event(http_receiver, "trigger", new, after=mark_outage)
    ticket_notification(http_receiver, "firing", slow, after=mark_outage)
    # The crash lost Alertmanager's notification log, so it pages `old` again - with the same dedup_key, which
    # PagerDuty folds into the open incident.
    again_old = pagerduty_event(http_receiver, "trigger", old, after=mark_outage)
    assert dedup(again_old) == dedup(first_old)

    mark_recovery = http_receiver.mark()
    delivery.deliver(slo_states(page=[], quiet=[old, new, slow]), utc_now())

    assert dedup(pagerduty_event(http_receiver, "resolve", old, after=mark_recovery)) == dedup(first_old)
    assert dedup(pagerduty_event(http_receiver, "resolve", new, after=mark_recovery)) == dedup(trigger_new)
    ticket_notification(http_receiver, "resolved", slow, after=mark_recovery)
    assert sink.pending() == []
    assert not any(sink.stats.dropped.values()), sink.stats.dropped
    assert sink.stats.spooled > 0 and sink.stats.failed > 0


def test_a_resolve_spooled_while_alertmanager_is_stopped_reaches_pagerduty_after_the_restart(
    example_alertmanager: Alertmanager, http_receiver: HttpReceiver, sink: AlertSink
) -> None:
    gone = unique("gone")
    # No resend of resolved alerts: the resolve is posted once, during the outage, so only the spool can deliver it.
    delivery = SloAlertDelivery(sink, Incidents(resend_interval_s=CYCLE_S, resolved_retention_s=0))
    mark = http_receiver.mark()
    delivery.deliver(slo_states(page=[gone]), utc_now())
    trigger = pagerduty_event(http_receiver, "trigger", gone, after=mark)
    # Alertmanager logs a notification just after the receiver answers; stopping it in between would lose it.
    assert wait_until(lambda: example_alertmanager.notifications_sent("pagerduty") >= 1, 30)

    # SIGTERM: Alertmanager saves its notification log on the way down, so after the restart it knows the page
    # was notified and sends the resolve the spool delivers. (After a SIGKILL it cannot: docs/alerting.md.)
    with example_alertmanager.outage(signal.SIGTERM):
        run_cycles(3 * CYCLE_S, CYCLE_S, lambda k: delivery.deliver(slo_states(page=[], quiet=[gone]), utc_now()))
        assert [(a.labels["slo"], a.is_resolved(utc_now())) for a in sink.pending()] == [(gone, True)]

    deliver_until_drained(delivery, sink, lambda: slo_states(page=[], quiet=[gone]))
    assert sink.stats.sent == 2  # the trigger, then the spooled resolve: nothing was resent in between

    resolve = pagerduty_event(http_receiver, "resolve", gone, after=mark)
    assert dedup(resolve) == dedup(trigger)
