"""The soak's judgement and picture (pure, tested in tests/unit/bench/test_soak_report.py): growth per hour of each
sampled resource after warm-up, verdicts taken while a fault was on or after it healed, and an SVG of the samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

HEALED_AFTER_S = 300.0
"""A fault is over this long after it was undone: a verdict worse than OK after that, with no fault on, is false."""
BUDGET_CHECK = "slo: "
"""An SLO budget's verdict covers the SLO's window (30 days in the demo config): once a fault has overspent it, CRIT
stays true after the cluster healed, so such a verdict is never counted false while its window holds a fault."""
INFO_SUMMARIES = (": not available", ": stale")
"""Checks with nothing to judge (INFO), listed among the reasons but never the cause of a verdict worse than OK."""
DETECT_WITHIN_S = 10.0
"""The page may still say OK this long into a broker fault: it shows its last refresh (every 5 s), and `check`
names a hung broker within its 3 s budget (docs/check.md). An OK later than that is false."""


@dataclass(frozen=True)
class Sample:
    """One minute's reading of `run`: seconds since the soak started and the resources it holds."""

    t_s: float
    rss_mb: float
    threads: int
    fds: int
    children_rss_mb: float
    """Spark's JVM and anything else `run` started, summed."""
    alert_spool_entries: float


@dataclass(frozen=True)
class Fault:
    """One fault the soak applied: `kind` from `started_s` until `undone_s` (seconds since the start)."""

    kind: str
    target: str
    started_s: float
    undone_s: float


@dataclass(frozen=True)
class Verdict:
    """The status page's overall verdict at `t_s`."""

    t_s: float
    status: str
    why: tuple[str, ...] = ()
    """`check: summary` of each check worse than OK, so a false verdict can be traced."""


def growth_per_hour(samples: Sequence[Sample], field: str, warmup_s: float) -> float | None:
    """Least-squares slope of `field` after `warmup_s`, per hour, as a fraction of its mean there (0.05 = 5 %/h);
    None with fewer than three samples past warm-up."""
    points = [(s.t_s, float(getattr(s, field))) for s in samples if s.t_s >= warmup_s]
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0 or mean_y == 0:
        return 0.0
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return slope * 3600.0 / mean_y


def during(fault: Fault, t_s: float) -> bool:
    return fault.started_s <= t_s <= fault.undone_s


@dataclass(frozen=True)
class Windows:
    """When a verdict of OK is false (a broker fault on, past detection) and when one worse than OK is excused (a
    fault on or healing, the start included)."""

    broken: tuple[Fault, ...]
    detectable: tuple[Fault, ...]
    healing: tuple[Fault, ...]

    @classmethod
    def of(cls, faults: Sequence[Fault], cluster_faults: frozenset[str], load_faults: frozenset[str]) -> Windows:
        broken = tuple(f for f in faults if f.kind in cluster_faults)
        detectable = tuple(Fault(f.kind, f.target, f.started_s + DETECT_WITHIN_S, f.undone_s) for f in broken)
        start_up = Fault("start", "run", 0.0, 0.0)  # run's first checks and windows fill before it is judged
        excusing = [start_up, *broken, *(f for f in faults if f.kind in load_faults)]
        healing = tuple(Fault(f.kind, f.target, f.started_s, f.undone_s + HEALED_AFTER_S) for f in excusing)
        return cls(broken, detectable, healing)

    def falsity(self, verdict: Verdict) -> str | None:
        """`ok_while_broken`, `alarm_when_healed`, or None for a verdict that is right or not judged."""
        if verdict.status == "OK":
            return "ok_while_broken" if any(during(f, verdict.t_s) for f in self.detectable) else None
        if any(during(f, verdict.t_s) for f in self.healing):
            return None
        if budget_only(verdict) and any(f.started_s < verdict.t_s for f in self.broken):
            return None  # the budget's window holds a fault that overspent it
        return "alarm_when_healed"


def budget_only(verdict: Verdict) -> bool:
    """True when the SLO budget check is the only reason judged (INFO checks aside)."""
    judged = [w for w in verdict.why if not w.endswith(INFO_SUMMARIES) and w.split(": ", 1)[0] != "broker"]
    return bool(judged) and all(w.startswith(BUDGET_CHECK) for w in judged)


def false_verdicts(
    verdicts: Sequence[Verdict],
    faults: Sequence[Fault],
    cluster_faults: frozenset[str],
    load_faults: frozenset[str] = frozenset(),
) -> dict[str, int]:
    """`ok_while_broken`: OK while a broker fault was on, past DETECT_WITHIN_S; `alarm_when_healed`: not OK with no
    fault on or healing (every fault undone, and the start, at least HEALED_AFTER_S before); `faults_missed`: broker
    faults with no verdict worse than OK while on. Load faults (the soak's own clients dead) only excuse a verdict
    worse than OK; Alertmanager down never makes a verdict false, since the cluster itself is healthy then."""
    windows = Windows.of(faults, cluster_faults, load_faults)
    kinds = [windows.falsity(v) for v in verdicts]
    missed = sum(1 for f in windows.broken if not any(v.status != "OK" and during(f, v.t_s) for v in verdicts))
    return {
        "ok_while_broken": kinds.count("ok_while_broken"),
        "alarm_when_healed": kinds.count("alarm_when_healed"),
        "faults_missed": missed,
    }


def false_verdict_lines(
    verdicts: Sequence[Verdict], faults: Sequence[Fault], cluster_faults: frozenset[str], load_faults: frozenset[str]
) -> list[str]:
    """Each false verdict with its minute and the page's reasons, so a published count can be traced."""
    windows = Windows.of(faults, cluster_faults, load_faults)
    lines = []
    for v in verdicts:
        kind = windows.falsity(v)
        if kind is not None:
            lines.append(f"- minute {v.t_s / 60:.1f}, {kind}: {v.status}; {'; '.join(v.why)[:300]}")
    return lines


def svg_plot(samples: Sequence[Sample], faults: Sequence[Fault], width: int = 900, row_h: int = 120) -> str:
    """One row per resource over the soak's minutes, fault windows shaded; axis labels name each row's range."""
    rows = [
        ("rss_mb", "RSS of run (MB)"),
        ("children_rss_mb", "RSS of run's children (MB)"),
        ("threads", "threads"),
        ("fds", "open files"),
        ("alert_spool_entries", "alerts spooled"),
    ]
    end_s = max((s.t_s for s in samples), default=1.0) or 1.0
    left, pad = 170, 14
    height = len(rows) * (row_h + pad) + pad
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    plot_w = width - left - pad

    def x_of(t_s: float) -> float:
        return left + plot_w * t_s / end_s

    for index, (field, title) in enumerate(rows):
        top = pad + index * (row_h + pad)
        values = [float(getattr(s, field)) for s in samples]
        low, high = (min(values), max(values)) if values else (0.0, 1.0)
        span = (high - low) or 1.0
        out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{row_h}" fill="none" stroke="#ccc"/>')
        for fault in faults:
            x0, x1 = x_of(fault.started_s), x_of(fault.undone_s)
            out.append(
                f'<rect x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 1):.1f}" height="{row_h}" fill="#fde2e2">'
                f"<title>{escape(fault.kind)} {escape(fault.target)}</title></rect>"
            )
        points = " ".join(
            f"{x_of(s.t_s):.1f},{top + row_h - (v - low) / span * (row_h - 8) - 4:.1f}"
            for s, v in zip(samples, values, strict=True)
        )
        out.append(f'<polyline points="{points}" fill="none" stroke="#1f6feb" stroke-width="1.5"/>')
        out.append(f'<text x="4" y="{top + 14}">{escape(title)}</text>')
        out.append(f'<text x="4" y="{top + 30}" fill="#666">{low:g} .. {high:g}</text>')
    out.append(f'<text x="{left}" y="{height - 2}" fill="#666">0 .. {end_s / 60:.0f} min; shaded: faults</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def markdown_rows(samples: Sequence[Sample], minutes: Sequence[float]) -> list[str]:
    """One table row per requested minute (the nearest sample): the figures docs/benchmarks.md shows."""
    rows = ["| minute | RSS of run | RSS of its children (Spark) | threads | open files | alerts spooled |"]
    rows.append("|---|---|---|---|---|---|")
    for minute in minutes:
        if not samples:
            break
        s = min(samples, key=lambda x: abs(x.t_s - minute * 60))
        rows.append(
            f"| {round(s.t_s / 60)} | {s.rss_mb:.0f} MB | {s.children_rss_mb:.0f} MB | {s.threads} | {s.fds} "
            f"| {s.alert_spool_entries:g} |"
        )
    return rows
