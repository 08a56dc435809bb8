"""Prometheus rules equivalent to the burn-rate job, for SLOs whose SLI is a Prometheus counter pair. Pure rendering
(spec model -> rule group dicts -> YAML); `slo/rules_promtool.py` generates their promtool tests and `write_rules` is
the only I/O.

One group per SLO, evaluated every minute; its rules run in order, each reading the ones before at the same time:
  1. per-minute events from the spec's PromQL, minutes the job would skip dropped (`slo:sli_{good,total}:events1m`);
     timeslice SLOs then count one slice per minute with events (`slo:sli_{good,total}:slices1m`);
  2. the error ratio per window as a ratio of sums (`slo:sli_error:ratio_rate5m` ... `_rate3d`, and the period);
  3. objective, budget, period burn rate and budget remaining (Sloth's names; the period ones for rolling windows);
  4. one alert per severity, `KafkaSLOBurnRate`, with the labels slo/alerting.py gives the job's alerts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from pulse.alerts import render_link
from pulse.errors import ConfigError
from pulse.names import LABEL_NAME
from slo.alerting import ALERTNAME, RESERVED_LABELS
from slo.model import BurnPair, PrometheusSource, RollingWindow, Slo
from slo.policy import DAY_S, HOUR_S, MINUTE_S, REPORTED_WINDOWS_S, format_duration

GROUP_INTERVAL = "1m"
"""The job reads one value of each expression per minute; the group must run at that pace for sums to match."""

OBJECTIVE = "slo:objective:ratio"
ERROR_BUDGET = "slo:error_budget:ratio"
TIME_PERIOD = "slo:time_period:days"
PERIOD_BURN_RATE = "slo:period_burn_rate:ratio"
BUDGET_REMAINING = "slo:period_error_budget_remaining:ratio"
"""Sloth's meta series names (its generated rules, v0.16.0), so dashboards written for Sloth find them."""


class RulesRefused(ConfigError):
    """An SLO cannot become Prometheus rules as specified; the message names the SLO and the key."""


@dataclass(frozen=True)
class RuleOptions:
    """What the config adds to every alert, as slo/alerting.py adds it to the job's: `alerting.labels` (routing,
    identity) and the `alerting.runbook_url` template."""

    labels: Mapping[str, str] = field(default_factory=dict)
    runbook_url: str | None = None


def has_prometheus_source(slo: Slo) -> bool:
    """Rules exist only for SLIs Prometheus holds; event-log SLOs stay with the Spark job."""
    return isinstance(slo.source, PrometheusSource)


# --- names ------------------------------------------------------------------------------------------------------


def events_metric(kind: Literal["good", "total"]) -> str:
    return f"slo:sli_{kind}:events1m"


def slices_metric(kind: Literal["good", "total"]) -> str:
    return f"slo:sli_{kind}:slices1m"


def unit_metric(slo: Slo, kind: Literal["good", "total"]) -> str:
    """The per-minute series the windows sum: events, or slices for timeslice budgeting."""
    return events_metric(kind) if slo.timeslice_target is None else slices_metric(kind)


def ratio_metric(window_s: int) -> str:
    return f"slo:sli_error:ratio_rate{format_duration(window_s)}"


def period_s(slo: Slo) -> int | None:
    """The budget period of a rolling window; None for calendar windows (PromQL has no month-start range)."""
    return slo.window.period_s if isinstance(slo.window, RollingWindow) else None


def rule_windows_s(slo: Slo) -> list[int]:
    """Windows given a ratio rule: the reported ones (`burn_rates` keys), every pair's, and a rolling period."""
    found = set(REPORTED_WINDOWS_S) | {w for p in slo.pairs for w in (p.long_s, p.short_s)}
    period = period_s(slo)
    if period is not None:
        found.add(period)
    return sorted(found)


def range_of(window_s: int) -> str:
    """`[4m59s]` for 5m: the job's window [t - W, t) holds W/1m minute buckets, and a range 1 s short of W holds
    exactly W/1m of the group's per-minute samples on Prometheus 2.x (closed ranges) and 3.x (left-open) alike."""
    out, rest = "", window_s - 1
    for unit, size in (("d", DAY_S), ("h", HOUR_S), ("m", MINUTE_S), ("s", 1)):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return f"[{out}]"


def literal(value: Fraction | float) -> str:
    """A PromQL number that parses to the float nearest the exact value: a ratio exactly at a threshold then
    compares equal, so the strict `>` holds as in the job (Sloth's `0.0009999999999999432` would not)."""
    return repr(float(value))


def _string(value: str) -> str:
    """A PromQL (Go) double-quoted string literal."""
    return json.dumps(value)


def series_labels(slo: Slo) -> dict[str, str]:
    """The labels of every series and alert of the SLO: `slo` and the spec's own labels (identity)."""
    problems: list[str] = []
    for name in slo.labels:
        if not LABEL_NAME.fullmatch(name) or name.startswith("__"):
            problems.append(f"SLO {slo.name!r}: labels.{name}: not a Prometheus label name (letters, digits, '_')")
        elif name in RESERVED_LABELS:
            problems.append(f"SLO {slo.name!r}: labels.{name}: {name!r} is set by kafka-pulse; rename it in the spec")
    if problems:
        raise RulesRefused("\n".join(problems))
    return {"slo": slo.name, **dict(sorted(slo.labels.items()))}


def selector(slo: Slo) -> str:
    return "{slo=" + _string(slo.name) + "}"


def _sum_over(slo: Slo, kind: Literal["good", "total"], window_s: int) -> str:
    return f"sum_over_time({unit_metric(slo, kind)}{selector(slo)}{range_of(window_s)})"


# --- 1. per-minute events -----------------------------------------------------------------------------------------


def sli_rules(slo: Slo) -> list[dict[str, Any]]:
    """The spec's PromQL once a minute. A minute the job would skip (good or total missing, negative, not finite,
    or good above total) is dropped, so both sums leave it out as the job's do."""
    labels = series_labels(slo)
    good, total = f"sum({slo.good.strip()})", f"sum({slo.total.strip()})"
    rules: list[dict[str, Any]] = [
        {
            "record": events_metric("total"),
            "expr": f"({total} >= 0 < Inf)\nand on() ({good} >= 0 < Inf)\nand on() {good} <= {total}\n",
            "labels": labels,
        },
        {
            "record": events_metric("good"),
            "expr": f"{good}\nand on() {events_metric('total')}{selector(slo)}\n",
            "labels": labels,
        },
    ]
    if slo.timeslice_target is not None:
        num, den = slo.timeslice_target.numerator, slo.timeslice_target.denominator
        sel = selector(slo)
        rules += [
            {"record": slices_metric("total"), "expr": f"({events_metric('total')}{sel} > 0) * 0 + 1"},
            {
                # A minute is a good slice when good x den >= total x num for the target num/den (as the job).
                "record": slices_metric("good"),
                "expr": f"{slices_metric('total')}{sel}\n* ({events_metric('good')}{sel} * {den}"
                f" >= bool {events_metric('total')}{sel} * {num})\n",
            },
        ]
    return rules


# --- 2. error ratio per window ------------------------------------------------------------------------------------


def ratio_rules(slo: Slo) -> list[dict[str, Any]]:
    """bad / total over each window, summed from the per-minute series; absent when the window holds no events
    ("no data", which never fires)."""
    rules: list[dict[str, Any]] = []
    for window in rule_windows_s(slo):
        total, good = _sum_over(slo, "total", window), _sum_over(slo, "good", window)
        rules.append({"record": ratio_metric(window), "expr": f"({total}\n - {good})\n/ ({total} > 0)\n"})
    return rules


# --- 3. budget ----------------------------------------------------------------------------------------------------


def budget_rules(slo: Slo) -> list[dict[str, Any]]:
    """Objective and budget as series; for a rolling window also the period's burn rate and budget remaining."""
    labels = series_labels(slo)
    rules: list[dict[str, Any]] = [
        {"record": OBJECTIVE, "expr": f"vector({literal(slo.objective / 100)})", "labels": labels},
        {"record": ERROR_BUDGET, "expr": f"vector({literal(slo.budget)})", "labels": labels},
    ]
    period = period_s(slo)
    if period is not None:
        rules += [
            {"record": TIME_PERIOD, "expr": f"vector({literal(Fraction(period, DAY_S))})", "labels": labels},
            {"record": PERIOD_BURN_RATE, "expr": f"{ratio_metric(period)}{selector(slo)} / {literal(slo.budget)}"},
            {"record": BUDGET_REMAINING, "expr": f"1 - {PERIOD_BURN_RATE}{selector(slo)}"},
        ]
    return rules


# --- 4. alerts ----------------------------------------------------------------------------------------------------


def pair_condition(slo: Slo, pair: BurnPair) -> str:
    """Both windows' error ratios strictly above factor x budget (and the long window holding `min_events`);
    its value is the long window's ratio."""
    limit = literal(slo.threshold(pair))
    sel = selector(slo)
    parts = [f"{ratio_metric(pair.long_s)}{sel} > {limit}", f"{ratio_metric(pair.short_s)}{sel} > {limit}"]
    if slo.min_events > 0:
        parts.append(f"{_sum_over(slo, 'total', pair.long_s)} >= {literal(slo.min_events)}")
    return "\n  and\n  ".join(parts)


def tier_condition(slo: Slo, pairs: Sequence[BurnPair]) -> str:
    """Any pair of the tier (Workbook approach 6); `$value` is the long-window ratio of the first firing pair."""
    return "\n or\n".join(f"(\n  {pair_condition(slo, pair)}\n)" for pair in pairs) + "\n"


@dataclass(frozen=True)
class Text:
    """Annotation text as is."""

    text: str


@dataclass(frozen=True)
class Measure:
    """A number Prometheus queries when it expands the annotation (slo/rules_scenarios.py computes the same one
    for the promtool tests); `before`/`after` frame it, `otherwise` stands when the query is empty."""

    what: Literal["burn_rate", "sli", "budget_remaining"]
    window_s: int = 0
    percent: bool = False
    fmt: str = "%.6g"
    before: str = ""
    after: str = ""
    otherwise: str = ""


@dataclass(frozen=True)
class FirstFiring:
    """`14.9x too fast over 1h`: the burn rate over the long window of the first firing pair, else `too fast`
    (slo/alerting.py's summary)."""

    pairs: tuple[BurnPair, ...]


Piece = Text | Measure | FirstFiring


def _number(value: float) -> str:
    return f"{value:.6g}"


def alert_labels(slo: Slo, severity: str, options: RuleOptions) -> dict[str, str]:
    """The alert's labels as slo/alerting.py's `alert_labels` gives them, SLO labels winning over config ones."""
    return {**options.labels, **series_labels(slo), "alertname": ALERTNAME, "severity": severity}


def annotation_pieces(slo: Slo, severity: str, options: RuleOptions) -> dict[str, list[Piece]]:
    """The annotations slo/alerting.py sends, as pieces: without the per-pair states and the exhaustion time,
    which PromQL does not compute."""
    pairs = tuple(p for p in slo.pairs if p.severity == severity)
    rolling = period_s(slo) is not None
    conditions = "; ".join(f"{p.name} > {_number(float(p.factor))}x" for p in pairs)
    facts: list[Piece] = [Text(f"Objective {_number(float(slo.objective))}% over {slo.window.label}")]
    if rolling:
        facts += [
            Measure("sli", percent=True, fmt="%.4g", before=", SLI ", after="%"),
            Measure("budget_remaining", percent=True, fmt="%.3g", before=", ", after="% of the error budget left"),
        ]
    pieces: dict[str, list[Piece]] = {
        "summary": [Text(f"SLO {slo.name} burns its error budget "), FirstFiring(pairs), Text(f" ({severity})")],
        "description": [
            Text(slo.description + ". " if slo.description else ""),
            *facts,
            Text(f". Conditions: {conditions}."),
        ],
        "objective": [Text(_number(float(slo.objective)))],
        "slo_window": [Text(slo.window.label)],
    }
    if rolling:
        pieces["sli"] = [Measure("sli", otherwise="no data")]
        pieces["budget_remaining"] = [Measure("budget_remaining", otherwise="no data")]
    pieces["conditions"] = [Text(conditions)]
    for window in REPORTED_WINDOWS_S:
        key = "burn_rate_" + re.sub(r"[^A-Za-z0-9_]", "_", format_duration(window))
        pieces[key] = [Measure("burn_rate", window, otherwise="no data")]
    if options.runbook_url:
        pieces["runbook_url"] = [Text(render_link(options.runbook_url, alert_labels(slo, severity, options)))]
    return pieces


def measure_query(slo: Slo, measure: Measure) -> str:
    """The PromQL an annotation runs for a measure."""
    sel = selector(slo)
    if measure.what == "burn_rate":
        query = f"{ratio_metric(measure.window_s)}{sel} / {literal(slo.budget)}"
    elif measure.what == "sli":
        period = period_s(slo)
        assert period is not None
        query = f"(1 - {ratio_metric(period)}{sel})"
    else:
        query = f"{BUDGET_REMAINING}{sel}"
    return f"{query} * 100" if measure.percent else query


def _template_text(text: str) -> str:
    """Text placed in a Go template literally: `{{` would open an action, so such text becomes a string action."""
    return "{{ " + json.dumps(text) + " }}" if "{{" in text else text


def _template_value(query: str, fmt: str, before: str, after: str, otherwise: str) -> str:
    """`before value after` when the query returns a sample, else `otherwise` (already a template)."""
    shown = _template_text(before) + '{{ . | first | value | printf "' + fmt + '" }}' + _template_text(after)
    return "{{ with query `" + query + "` }}" + shown + "{{ else }}" + otherwise + "{{ end }}"


def render_template(slo: Slo, pieces: Sequence[Piece]) -> str:
    """Pieces as a Prometheus annotation template (Go text/template with `query`)."""
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, Text):
            out.append(_template_text(piece.text))
        elif isinstance(piece, Measure):
            query = measure_query(slo, piece)
            out.append(_template_value(query, piece.fmt, piece.before, piece.after, _template_text(piece.otherwise)))
        else:
            chain = "too fast"
            for pair in reversed(piece.pairs):
                query = f"(\n  {pair_condition(slo, pair)}\n) / {literal(slo.budget)}"
                chain = _template_value(query, "%.1f", "", f"x too fast over {format_duration(pair.long_s)}", chain)
            out.append(chain)
    return "".join(out)


FiringRate = Callable[[Sequence[BurnPair]], tuple[int, float] | None]
"""(long window seconds, burn rate over it) of the first firing pair, or None."""


def render_expected(pieces: Sequence[Piece], measure: Callable[[Measure], float | None], firing: FiringRate) -> str:
    """Pieces as Prometheus expands them, given the values of the measures: the promtool tests' expectations."""
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, Text):
            out.append(piece.text)
        elif isinstance(piece, Measure):
            value = measure(piece)
            out.append(piece.otherwise if value is None else piece.before + piece.fmt % value + piece.after)
        else:
            found = firing(piece.pairs)
            out.append("too fast" if found is None else f"{found[1]:.1f}x too fast over {format_duration(found[0])}")
    return "".join(out)


def alert_rule(slo: Slo, severity: str, options: RuleOptions) -> dict[str, Any] | None:
    """`KafkaSLOBurnRate` for one severity; None when the tier is disabled. No `for:` (Workbook: durations in
    SLO alerts delay detection); page and ticket differ only by `severity`, as the job's alerts do."""
    pairs = [p for p in slo.pairs if p.severity == severity]
    if not pairs:
        return None
    own = series_labels(slo)
    routing = {k: v for k, v in sorted(options.labels.items()) if k not in own and k not in RESERVED_LABELS}
    labels = {"severity": severity, **routing}
    return {
        "alert": ALERTNAME,
        "expr": tier_condition(slo, pairs),
        "labels": labels,
        "annotations": {
            key: render_template(slo, pieces) for key, pieces in annotation_pieces(slo, severity, options).items()
        },
    }


# --- the group and the files ------------------------------------------------------------------------------------


def group_name(slo: Slo) -> str:
    return f"kafka-pulse-slo-{slo.name}"


def rule_group(slo: Slo, options: RuleOptions) -> dict[str, Any]:
    """Every rule of one SLO, in evaluation order, in one group run every minute."""
    _check_options(slo, options)
    rules = [*sli_rules(slo), *ratio_rules(slo), *budget_rules(slo)]
    for severity in ("page", "ticket"):
        rule = alert_rule(slo, severity, options)
        if rule is not None:
            rules.append(rule)
    return {"name": group_name(slo), "interval": GROUP_INTERVAL, "rules": rules}


def _check_options(slo: Slo, options: RuleOptions) -> None:
    for name in options.labels:
        if not LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise RulesRefused(f"alerting.labels.{name}: not a Prometheus label name (letters, digits, '_')")
    series_labels(slo)
