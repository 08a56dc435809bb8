"""The "Where we stand" tables of docs/benchmarks.md beside the committed figures compare.py reads: a figure shown in
both must say the same in both, so a round that updates one table and not the other fails a unit test.

A committed row names the "Where we stand" row that shows it (its `shown in`, the row's first cell) or `-` when the
committed table is its only place. The figures checked are the leading ones of a cell, the text before its first
"(": older figures and notes go in parentheses there ("11.4 µs (8.9 in the run before)"), so an updated row whose
committed figure is left behind in a note still disagrees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from compare import MARKER, Committed

SECTION = "## Where we stand"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class StandingRow:
    """One row of a "Where we stand" table: the cells holding our figure, and the peer's and the ratio where the
    table has them."""

    label: str
    ours: str
    peer: str | None
    ratio: str | None


def label_of(text: str) -> str:
    """A row's name as both tables spell it, without the backticks markdown may put around parts of it."""
    return " ".join(text.replace("`", "").split())


def lead_numbers(cell: str) -> list[str]:
    """The figures a cell leads with, as printed (before its first "("): "2.39 / 3.62 s" gives both, ranges both
    ends."""
    return NUMBER.findall(cell.split("(", 1)[0])


def shows(cell: str, value: float) -> bool:
    """Whether one of the cell's leading figures is `value` at the precision the cell prints it ("4.6x" shows
    4.61)."""
    for printed in lead_numbers(cell):
        decimals = len(printed.partition(".")[2])
        if abs(float(printed.replace(",", "")) - value) <= 0.5 * 10**-decimals + 1e-9:
            return True
    return False


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_standing(markdown: str) -> dict[str, StandingRow]:
    """The rows of the tables between "## Where we stand" and the committed figures' marker, by label."""
    lines = markdown.splitlines()
    try:
        start = lines.index(SECTION)
        end = next(i for i, line in enumerate(lines) if line.strip() == MARKER)
    except (ValueError, StopIteration):
        raise ValueError(f"no {SECTION!r} section ahead of {MARKER}") from None
    rows: dict[str, StandingRow] = {}
    header: list[str] | None = None
    for line in lines[start + 1 : end]:
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the separator row
        row = dict(zip(header, cells, strict=True))
        label = label_of(cells[0])
        if label in rows:
            raise ValueError(f"{label!r} appears twice in {SECTION!r}")
        rows[label] = StandingRow(
            label, row.get("ours", row.get("now", "")), row.get("peer's figure"), row.get("ratio")
        )
    return rows


def disagreements(committed: Iterable[Committed], standing: Mapping[str, StandingRow]) -> list[str]:
    """Each committed figure its `shown in` row does not show (ours, and the peer's and the ratio where both have
    them); empty when the tables agree."""
    problems = []
    for was in committed:
        if was.shown_in == "-":
            continue
        name = f"{was.key} at {was.at}"
        row = standing.get(label_of(was.shown_in))
        if row is None:
            problems.append(f"{name}: no row {was.shown_in!r} in {SECTION!r}")
            continue
        pairs = [("ours", row.ours, was.value)]
        if was.peer is not None and row.peer is not None:
            pairs.append(("peer's figure", row.peer, was.peer))
        if was.ratio is not None and row.ratio is not None:
            pairs.append(("ratio", row.ratio, was.ratio))
        for column, cell, value in pairs:
            if not shows(cell, value):
                problems.append(f"{name}: committed {column} {value:g}, {row.label!r} shows {cell!r}")
    return problems
