"""The report's two faces: the `--json` document (schema `kafka-pulse-check/1`, docs/check.md) and the rich table
an operator reads in a terminal. Rendering only; the verdicts are made in judge/verdict.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_pulse.check.judge.verdict import Report, Status
from pulse.redact import redact_text

if TYPE_CHECKING:
    from rich.console import Console

SCHEMA = "kafka-pulse-check/1"
"""Bumped when a field changes meaning or goes away; new fields may appear without a bump."""
_STYLE = {
    Status.OK: "bold green",
    Status.WARN: "bold yellow",
    Status.CRIT: "bold red",
    Status.UNKNOWN: "bold magenta",
    Status.INFO: "cyan",
}
_TITLES = {
    "brokers": "brokers",
    "controller": "controller",
    "partitions": "partitions",
    "round_trip": "canary round trip",
    "lag": "consumer lag",
    "slo": "SLO budgets",
    "config": "config",
}


def report_json(report: Report) -> dict[str, Any]:
    """The `--json` document; every key is listed in docs/check.md. Summaries and reasons quote errors (a client's
    message may hold a URL with its login): both go through pulse/redact.py here and in `print_report`."""
    status = report.status
    return {
        "schema": SCHEMA,
        "cluster": report.cluster,
        "bootstrap_servers": list(report.bootstrap_servers),
        "status": status.value,
        "exit_code": status.exit_code,
        "culprits": list(report.culprits),
        "checked_at": report.checked_at.isoformat().replace("+00:00", "Z"),
        "elapsed_s": round(report.elapsed_s, 3),
        "timeout_s": report.timeout_s,
        "checks": [
            {
                "name": s.name,
                "status": s.status.value,
                "summary": redact_text(s.summary),
                "reasons": [redact_text(r) for r in s.reasons],
                "culprits": list(s.culprits),
                "details": dict(s.details),
            }
            for s in report.sections
        ],
    }


def print_report(report: Report, console: Console) -> None:
    """One row per check, then the reasons, then the verdict line with the exit code."""
    from rich.table import Table  # imported here: `--json` and the status page never need rich
    from rich.text import Text

    table = Table(title=f"kafka-pulse check: cluster {report.cluster}", title_justify="left")
    table.add_column("check")
    table.add_column("status")
    table.add_column("summary", overflow="fold")
    for section in report.sections:
        table.add_row(
            _TITLES.get(section.name, section.name),
            Text(section.status.value, _STYLE[section.status]),
            redact_text(section.summary),
        )
    console.print(table)
    for section in report.sections:
        for reason in section.reasons:
            title = Text(f"  {_TITLES.get(section.name, section.name)}: ", style="dim")
            console.print(title + Text(redact_text(reason)))
    status = report.status
    verdict = Text(status.value, _STYLE[status])
    if report.culprits:
        verdict += Text(" - " + ", ".join(f"broker {b}" for b in report.culprits))
    verdict += Text(f" (exit {status.exit_code}, {report.elapsed_s:.1f} s)", style="dim")
    console.print(verdict)
