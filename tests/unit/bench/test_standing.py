"""bench/standing.py: the "Where we stand" tables and the committed figures say the same about every figure both
show, so a round cannot update one and leave the other behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from compare import COLUMNS, MARKER, Committed, parse_table
from standing import StandingRow, disagreements, lead_numbers, parse_standing, shows

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "benchmarks.md"


@pytest.mark.parametrize(
    ("cell", "numbers"),
    [
        ("11.4 µs (8.9 in the run before; 9.1 on main)", ["11.4"]),
        ("2.39 / 3.62 s, CRIT naming it (before: 3.62 / 4.62 s)", ["2.39", "3.62"]),
        ("5.06-5.79 ms (idle 0.60-0.65 ms)", ["5.06", "5.79"]),
        ("7.4 s wall, 3.6 s CPU", ["7.4", "3.6"]),
        ("3,245 MiB", ["3,245"]),
        ("+0.59 to +1.39 ms (e2e 6.9-7.4 ms)", ["0.59", "1.39"]),
        ("0.42x (0.41; main 0.44; target 0.4x: behind)", ["0.42"]),
        ("never (60 rounds)", []),
    ],
)
def test_a_cell_leads_with_the_figures_before_its_first_parenthesis(cell: str, numbers: list[str]) -> None:
    assert lead_numbers(cell) == numbers


@pytest.mark.parametrize(
    ("cell", "value", "shown"),
    [
        ("4.6x (behind)", 4.61, True),  # printed to one decimal
        ("4.6x (behind)", 4.66, False),
        ("0.90 s at load 7", 0.90, True),
        ("0.90 s at load 7", 0.91, False),
        ("3,245 MiB", 3245, True),
        ("about 223,000 commits/s", 223000, True),
        ("11.4 µs (8.9 in the run before)", 8.9, False),  # an older figure left in the note is not shown
        ("250-256 B", 256, True),
    ],
)
def test_a_cell_shows_a_figure_at_the_precision_it_prints(cell: str, value: float, shown: bool) -> None:
    assert shows(cell, value) is shown


def committed(value: float, peer: float | None = None, shown_in: str = "lag: CPU per commit") -> Committed:
    ratio = None if peer is None else round(value / peer, 2)
    return Committed("k", "1x", value, "µs", "Burrow" if peer else "-", peer, ratio, "lower", "b", shown_in)


ROW = StandingRow("lag: CPU per commit", "11.4 µs (8.9 before)", "27.5 µs (22.2)", "0.41x (0.40)")


@pytest.mark.parametrize(
    ("was", "problems"),
    [
        pytest.param(committed(11.4, 27.5), [], id="agree"),
        pytest.param(committed(11.4), [], id="no peer committed: ours alone"),
        pytest.param(committed(99, shown_in="-"), [], id="shown nowhere else"),
        pytest.param(committed(8.9, 22.2), ["ours 8.9", "peer's figure 22.2", "ratio 0.4"], id="the old round"),
        pytest.param(committed(11.4, 20.0), ["peer's figure 20", "ratio 0.57"], id="another peer figure"),
        pytest.param(committed(11.4, shown_in="lag: gone"), ["no row 'lag: gone'"], id="renamed row"),
    ],
)
def test_a_committed_figure_disagreeing_with_its_row_is_reported(was: Committed, problems: list[str]) -> None:
    found = disagreements([was], {ROW.label: ROW})
    assert len(found) == len(problems) and all(p in f for p, f in zip(problems, found, strict=True)), found


def test_the_where_we_stand_tables_parse_by_label_with_and_without_a_peer() -> None:
    header = " | ".join(COLUMNS)
    markdown = (
        "## Where we stand\n\n| area: figure | ours | peer | peer's figure | ratio | date | command |\n"
        "|---|---|---|---|---|---|---|\n| check: `healthy` wall | 0.90 s | kafka-topics | 3.30 s | 0.27x | d | c |\n\n"
        "| area: figure | now | target | date | command |\n|---|---|---|---|---|\n| dev: up | 7.5 s | 90 s | d | c |\n"
        f"\n{MARKER}\n| {header} |\n|{'---|' * len(COLUMNS)}\n"
    )
    rows = parse_standing(markdown)
    assert rows == {
        "check: healthy wall": StandingRow("check: healthy wall", "0.90 s", "3.30 s", "0.27x"),
        "dev: up": StandingRow("dev: up", "7.5 s", None, None),
    }
    with pytest.raises(ValueError, match="twice"):
        parse_standing(markdown.replace("dev: up", "check: healthy wall"))


def test_docs_benchmarks_committed_figures_agree_with_where_we_stand() -> None:
    """The guard on the real page: a round that updates one table must update the other (or name no row)."""
    markdown = DOC.read_text()
    rows = parse_table(markdown)
    assert disagreements(rows, parse_standing(markdown)) == []
    assert sum(r.shown_in != "-" for r in rows) >= 25  # most committed figures are shown, and so checked, twice
