"""SLO reports as Markdown or as one self-contained HTML file (inline CSS and a hand-written SVG burn-down, no
external asset or script), from slo/report.py's figures. Formatting only: every number is computed there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from html import escape

from slo.report import PeriodReport, SloReport
from slo.results import iso

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2430;margin:2em auto;max-width:960px;
padding:0 1em}h1{font-size:1.5em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #d0d7de}
h3{font-size:1.05em}table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #d0d7de;
padding:.25em .6em;text-align:left}th{background:#f3f5f7}.met{color:#1a7f37;font-weight:600}
.missed{color:#cf222e;font-weight:600}.muted{color:#656d76}svg{background:#fbfcfd;border:1px solid #d0d7de}
"""


def percent(value: float | None, digits: int = 3) -> str:
    """0.99912 -> `99.912 %`; `-` without a value."""
    return "-" if value is None else f"{value * 100:.{digits}f} %"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~])")
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")


def markdown_text(text: str) -> str:
    """`text` (a label, a name, a description: anything a spec or a source row chose) as inert Markdown inline
    text: line breaks and control characters become one space (no new heading, row or block), `& < > "` become
    HTML entities (no tag), and Markdown's specials, `|` included, are backslash-escaped (no link, emphasis,
    code span or table cell)."""
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", _LINE_BREAKS.sub(" ", text))
    return escape(text, quote=True)  # after: the entities' own `#` stays unescaped


def _labels(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _verdict(p: PeriodReport) -> str:
    return "no data" if p.met is None else ("met" if p.met else "missed")


def _title(r: SloReport) -> str:
    labels = _labels(r.labels)
    return r.name + (f" ({labels})" if labels else "")


def _span(p: PeriodReport) -> str:
    return f"{iso(p.start)} to {iso(p.end)}" + (" (partial)" if p.partial else "")


# --- Markdown -------------------------------------------------------------------------------------------------


def to_markdown(reports: Sequence[SloReport], start: datetime, end: datetime) -> str:
    """The report as Markdown (GitHub tables), one section per SLO instance and period."""
    out = [f"# SLO report, {iso(start)} to {iso(end)}", ""]
    for r in reports:
        title, description = markdown_text(_title(r)), markdown_text(r.description)
        out += [f"## {title}", "", f"Objective {r.objective:g} % ({r.budgeting}). {description}".rstrip(), ""]
        for p in r.periods:
            out += [
                f"### {_span(p)}",
                "",
                "| compliance | objective | verdict | budget consumed | budget left | events | minutes with data |",
                "|---|---|---|---|---|---|---|",
                f"| {percent(p.compliance)} | {r.objective:g} % | {_verdict(p)} | {percent(p.budget_consumed, 1)} "
                f"| {percent(p.budget_remaining, 1)} | {p.total:g} | {p.data_minutes} of {p.minutes} |",
                "",
            ]
            if p.incidents:
                out += ["Incidents:", "", "| severity | start | end | bad events | budget |", "|---|---|---|---|---|"]
                out += [
                    f"| {i.severity} | {iso(i.start)} | {iso(i.end)}{' (ongoing)' if i.ongoing else ''} "
                    f"| {i.bad:g} | {percent(i.budget_consumed, 1)} |"
                    for i in p.incidents
                ]
                out.append("")
            else:
                out += ["No incidents.", ""]
            if p.worst_hours:
                out += ["Worst hours:", "", "| hour | bad events | of | budget |", "|---|---|---|---|"]
                out += [
                    f"| {iso(h.start)} | {h.bad:g} | {h.total:g} | {percent(h.budget_consumed, 1)} |"
                    for h in p.worst_hours
                ]
                out.append("")
    return "\n".join(out)


# --- HTML -----------------------------------------------------------------------------------------------------

_W, _H, _PAD = 640, 220, 40


def burndown_svg(p: PeriodReport) -> str:
    """Budget left over the period as an SVG polyline: 100 % at the start, the 0 % line marked; an overspent
    budget goes below it."""
    if not p.burndown:
        return '<p class="muted">No events in this period: no burn-down.</p>'
    span_s = max(1.0, (p.end - p.start).total_seconds())
    lowest = min(0.0, *(v for _, v in p.burndown))
    top, bottom = 1.0, lowest

    def x(t: datetime) -> float:
        return _PAD + (t - p.start).total_seconds() / span_s * (_W - 2 * _PAD)

    def y(v: float) -> float:
        return _PAD / 2 + (top - v) / (top - bottom) * (_H - _PAD)

    points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in p.burndown)
    zero, full = y(0.0), y(1.0)
    last = p.burndown[-1][1]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="Error budget left over the period, ending at {percent(last, 1)}">'
        f'<line x1="{_PAD}" y1="{full:.1f}" x2="{_W - _PAD}" y2="{full:.1f}" stroke="#d0d7de"/>'
        f'<line x1="{_PAD}" y1="{zero:.1f}" x2="{_W - _PAD}" y2="{zero:.1f}" stroke="#cf222e" stroke-dasharray="4 3"/>'
        f'<text x="4" y="{full + 4:.1f}" font-size="11">100%</text>'
        f'<text x="4" y="{zero + 4:.1f}" font-size="11">0%</text>'
        f'<text x="{_PAD}" y="{_H - 4}" font-size="11">{escape(iso(p.start) or "")}</text>'
        f'<text x="{_W - _PAD}" y="{_H - 4}" font-size="11" text-anchor="end">{escape(iso(p.end) or "")}</text>'
        f'<polyline fill="none" stroke="#0969da" stroke-width="2" points="{points}"/>'
        "</svg>"
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _period_html(r: SloReport, p: PeriodReport) -> str:
    verdict = _verdict(p)
    summary = _table(
        ["compliance", "objective", "verdict", "budget consumed", "budget left", "events", "minutes with data"],
        [
            [
                percent(p.compliance),
                f"{r.objective:g} %",
                verdict,
                percent(p.budget_consumed, 1),
                percent(p.budget_remaining, 1),
                f"{p.total:g}",
                f"{p.data_minutes} of {p.minutes}",
            ]
        ],
    )
    summary = summary.replace(f"<td>{verdict}</td>", f'<td class="{escape(verdict.replace(" ", "-"))}">{verdict}</td>')
    parts = [f"<h3>{escape(_span(p))}</h3>", summary, "<h4>Error budget left</h4>", burndown_svg(p)]
    if p.incidents:
        rows = [
            [
                i.severity,
                iso(i.start) or "",
                (iso(i.end) or "") + (" (ongoing)" if i.ongoing else ""),
                f"{i.bad:g}",
                percent(i.budget_consumed, 1),
            ]
            for i in p.incidents
        ]
        parts += ["<h4>Incidents</h4>", _table(["severity", "start", "end", "bad events", "budget"], rows)]
    else:
        parts.append('<p class="muted">No incidents.</p>')
    if p.worst_hours:
        rows = [
            [iso(h.start) or "", f"{h.bad:g}", f"{h.total:g}", percent(h.budget_consumed, 1)] for h in p.worst_hours
        ]
        parts += ["<h4>Worst hours</h4>", _table(["hour", "bad events", "of", "budget"], rows)]
    return "\n".join(parts)


def to_html(reports: Sequence[SloReport], start: datetime, end: datetime) -> str:
    """One self-contained page: inline CSS and SVG, no script, nothing fetched."""
    title = f"SLO report, {iso(start)} to {iso(end)}"
    body = [f"<h1>{escape(title)}</h1>"]
    for r in reports:
        body.append(f"<h2>{escape(_title(r))}</h2>")
        body.append(f"<p>Objective {r.objective:g} % ({escape(r.budgeting)}). {escape(r.description)}</p>")
        body += [_period_html(r, p) for p in r.periods]
    if not reports:
        body.append('<p class="muted">No SLOs.</p>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
