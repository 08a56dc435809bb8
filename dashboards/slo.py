"""The SLO dashboard: error budget remaining, burn rate per window, firing alerts and time to exhaustion, from the
burn-rate job's Pushgateway gauges (slo/output.py, every SLO) and from the recording rules `kafka-pulse slo rules`
generates (slo/rules.py, Prometheus-source SLOs) with their `KafkaSLOBurnRate` alerts (docs/slo.md).
"""

from __future__ import annotations

from dashboards.grafana import (
    Json,
    Query,
    Row,
    bad_above,
    bargauge,
    query_variable,
    stat,
    table,
    timeseries,
    value_mappings,
)
from dashboards.layout import dashboard

UID = "kafka-pulse-slo"
S = 'slo=~"$slo"'
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
"""The windows the job reports and the rules record (slo/policy.py REPORTED_WINDOWS_S)."""
FIRING = value_mappings({"0": ("ok", "green"), "1": ("firing", "red")})
BUDGET = ((None, "red"), (0.25, "orange"), (0.5, "green"))
BURN_RATE = ((None, "green"), (1, "orange"), (6, "red"))
"""Orange from 1 (the budget spent exactly in the SLO window), red from 6 (the default page's slower pair, 6h and 30m);
one declaration for the job's and the rules' burn-rate gauges."""


def _job(metric: str, selector: str = S) -> str:
    return f"max by (slo) (kafka_pulse_slo_{metric}{{{selector}}})"


def budgets() -> Row:
    """The burn-rate job's figures (`slo evaluate --pushgateway`, or `slo.pushgateway_url` on a schedule)."""
    to_exhaustion = (
        f"min by (slo) (kafka_pulse_slo_exhaustion_timestamp_seconds{{{S}}} - "
        f"kafka_pulse_slo_evaluation_timestamp_seconds{{{S}}})"
    )
    return Row(
        "Error budgets (burn-rate job)",
        [
            table(
                "SLOs",
                [
                    Query(_job("objective_ratio")),
                    Query(_job("sli_ratio")),
                    Query(_job("error_budget_remaining_ratio")),
                    Query(_job("burn_rate", f'{S}, window="1h"')),
                    Query(_job("alert_firing", f'{S}, severity="page"')),
                    Query(_job("alert_firing", f'{S}, severity="ticket"')),
                    Query(to_exhaustion),
                ],
                columns={
                    "slo": "SLO",
                    "Value #A": "Objective",
                    "Value #B": "SLI",
                    "Value #C": "Budget left",
                    "Value #D": "Burn rate 1h",
                    "Value #E": "Page",
                    "Value #F": "Ticket",
                    "Value #G": "Budget gone in",
                },
                units={
                    "Objective": "percentunit",
                    "SLI": "percentunit",
                    "Budget left": "percentunit",
                    "Budget gone in": "s",
                },
                mappings={"Page": FIRING, "Ticket": FIRING},
                description="Per SLO at its latest evaluation: budget left is 1 - consumed (negative when "
                "overspent); 'budget gone in' is how long the budget lasts if the forecast window's rates go on "
                "(empty when it outlasts the window).",
                width=24,
                sort_by="Budget left",
                descending=False,
            ),
            bargauge(
                "Error budget remaining",
                [Query(_job("error_budget_remaining_ratio"), "{{slo}}")],
                unit="percentunit",
                thresholds=BUDGET,
                minimum=0,
                maximum=1,
                width=8,
            ),
            bargauge(
                "Burn rate per window",
                [Query(f"max by (slo, window) (kafka_pulse_slo_burn_rate{{{S}}})", "{{slo}} {{window}}")],
                description="Error ratio over the window divided by the error budget: 1 spends the budget exactly "
                "in the SLO window; the default page fires above 14.4 (1h and 5m) or 6 (6h and 30m).",
                thresholds=BURN_RATE,
                minimum=0,
                width=8,
            ),
            stat(
                "Time to exhaustion",
                [Query(to_exhaustion, "{{slo}}")],
                description="As of the latest evaluation; 0 when the budget is already spent.",
                unit="s",
                thresholds=((None, "red"), (86400, "orange"), (7 * 86400, "green")),
                text_mode="value_and_name",
                width=8,
                height=8,
            ),
            timeseries(
                "Error budget remaining over time",
                [Query(_job("error_budget_remaining_ratio"), "{{slo}}")],
                unit="percentunit",
                thresholds=BUDGET,
                width=8,
            ),
            timeseries(
                "Alerts of the job",
                [Query(f"max by (slo, severity) (kafka_pulse_slo_alert_firing{{{S}}})", "{{slo}} {{severity}}")],
                description="1 while the severity's multiwindow burn-rate alert fires (the job posts these to "
                "Alertmanager itself).",
                draw="bars",
                maximum=1,
                width=8,
            ),
            stat(
                "Since the last evaluation",
                [Query(f"time() - max by (slo) (kafka_pulse_slo_evaluation_timestamp_seconds{{{S}}})", "{{slo}}")],
                description="The Pushgateway keeps the last push forever: an old evaluation means the SLO job "
                "stopped and every figure here is stale.",
                unit="s",
                thresholds=((None, "green"), (300, "orange"), (900, "red")),
                text_mode="value_and_name",
                width=8,
                height=8,
            ),
        ],
    )


def _rule_burn_rates() -> str:
    """Each `slo:sli_error:ratio_rate<W>` series divided by the SLO's budget, the window kept as a label."""
    names = "|".join(WINDOWS)
    ratios = (
        f'label_replace({{__name__=~"slo:sli_error:ratio_rate({names})", {S}}}, "window", "$1", "__name__", '
        f'"slo:sli_error:ratio_rate(.+)")'
    )
    return f"max by (slo, window) ({ratios} / on (slo) group_left () max by (slo) (slo:error_budget:ratio{{{S}}}))"


def rules() -> Row:
    """What Prometheus computes itself from the generated rules, with the alerts it fires."""
    return Row(
        "Prometheus rules (kafka-pulse slo rules)",
        [
            table(
                "Firing alerts",
                [Query(f'max by (slo, severity, alertstate) (ALERTS{{alertname="KafkaSLOBurnRate", {S}}})')],
                columns={"slo": "SLO", "severity": "Severity", "alertstate": "State"},
                description="KafkaSLOBurnRate alerts Prometheus evaluates from the generated rules (labelled like "
                "the job's alerts, so Alertmanager deduplicates the two).",
                width=8,
                sort_by="Severity",
            ),
            bargauge(
                "Budget remaining (rules)",
                [Query(f"max by (slo) (slo:period_error_budget_remaining:ratio{{{S}}})", "{{slo}}")],
                description="Rolling windows only: PromQL has no range starting at a calendar month.",
                unit="percentunit",
                thresholds=BUDGET,
                minimum=0,
                maximum=1,
                width=8,
            ),
            bargauge(
                "Burn rate per window (rules)",
                [Query(_rule_burn_rates(), "{{slo}} {{window}}")],
                thresholds=BURN_RATE,
                minimum=0,
                width=8,
            ),
            timeseries(
                "Burn rate over time (rules)",
                [Query(_rule_burn_rates(), "{{slo}} {{window}}")],
                thresholds=bad_above(1, "orange"),
            ),
            timeseries(
                "Events per minute (rules)",
                [
                    Query(f"sum by (slo) (slo:sli_total:events1m{{{S}}})", "total {{slo}}"),
                    Query(f"sum by (slo) (slo:sli_good:events1m{{{S}}})", "good {{slo}}"),
                ],
                description="The spec's good and total PromQL, recorded every minute.",
            ),
        ],
    )


def slo() -> Json:
    variables = [
        query_variable(
            "slo",
            "SLO",
            'label_values({__name__=~"kafka_pulse_slo_objective_ratio|slo:objective:ratio"}, slo)',
            multi=True,
        ),
    ]
    return dashboard(
        UID,
        "Kafka SLOs (kafka-pulse)",
        "Error budgets, burn rates, alerts and time to exhaustion of kafka-pulse's SLOs: from the burn-rate job "
        "(Pushgateway) and from the Prometheus rules `kafka-pulse slo rules` generates.",
        variables,
        [budgets(), rules()],
        refresh="1m",
        time_from="now-24h",
    )
