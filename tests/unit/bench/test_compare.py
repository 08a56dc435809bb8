"""bench/compare.py, the regression guard: the committed-figures table in docs/benchmarks.md parses, a figure more
than the threshold worse flags (ratio against the same run's peer where there is one), and the table cannot drift
from what the benches write."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import compare
import pytest
from compare import Committed, parse_table, worse_by
from figures import Figure, FigureLog, read_run

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "benchmarks.md"


def committed(
    key: str = "k", value: float = 10.0, peer: float | None = None, better: str = "lower", bench: str = "b"
) -> Committed:
    ratio = None if peer is None else value / peer
    return Committed(key, "1x", value, "s", "peer" if peer else "-", peer, ratio, better, bench)  # type: ignore[arg-type]


def verdict(was: Committed, now: Figure) -> compare.Verdict:
    (only,) = compare.compare([was], was.bench, [now], 0.15)
    return only


def test_the_committed_table_parses_and_its_ratios_are_ours_over_the_peer() -> None:
    rows = parse_table(DOC.read_text())
    keys = {(r.key, r.at) for r in rows}
    assert ("lag_cpu.cpu_per_commit", "5000/s") in keys and ("check.healthy_wall", "3 brokers") in keys
    for row in rows:
        assert (row.peer is None) == (row.ratio is None) == (row.peer_name == "-"), row
        if row.ratio is not None:
            assert row.computed_ratio == pytest.approx(row.ratio, abs=0.011), row


def test_every_committed_key_is_written_by_its_bench() -> None:
    """The table names a bench for each key; that bench must call `log.add("<key>", ...)` and take --figures-out."""
    for row in parse_table(DOC.read_text()):
        source = (REPO / "bench" / f"{row.bench}.py").read_text()
        written = {
            node.args[0].value
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        }
        assert row.key in written, f"{row.key}: no bench/{row.bench}.py add() writes it"
        assert '"--figures-out"' in source and f'FigureLog("{row.bench}")' in source, row.bench


def test_a_figure_16_percent_worse_flags_and_14_percent_does_not() -> None:
    assert verdict(committed(value=10), Figure("k", "1x", 11.6, "s")).state == "REGRESSED"
    assert verdict(committed(value=10), Figure("k", "1x", 11.4, "s")).state == "ok"
    assert verdict(committed(value=10), Figure("k", "1x", 5.0, "s")).state == "ok"


def test_higher_is_better_flags_a_fall_not_a_rise() -> None:
    was = committed(value=100, better="higher")
    assert verdict(was, Figure("k", "1x", 84, "/s", "higher")).state == "REGRESSED"
    assert verdict(was, Figure("k", "1x", 86, "/s", "higher")).state == "ok"
    assert verdict(was, Figure("k", "1x", 200, "/s", "higher")).state == "ok"
    assert worse_by(100, 84, "higher") == pytest.approx(0.16)


def test_with_a_peer_the_ratio_is_compared_not_the_figure() -> None:
    was = committed(value=8, peer=20)  # 0.4x
    assert verdict(was, Figure("k", "1x", 12, "µs", peer=30)).state == "ok"  # a slower host: both 50 % up
    assert verdict(was, Figure("k", "1x", 8, "µs", peer=20 / 1.16)).state == "REGRESSED"  # the peer got cheaper
    assert verdict(was, Figure("k", "1x", 8 * 1.14, "µs", peer=20)).state == "ok"


def test_a_figure_not_measured_is_reported_missing_and_one_at_another_scale_new() -> None:
    table = [committed("a", bench="lag_bench"), committed("b", bench="lag_bench"), committed("c", bench="other")]
    verdicts = compare.compare(table, "lag_bench", [Figure("a", "1x", 10, "s"), Figure("a", "9x", 1, "s")], 0.15)
    states = {(v.key, v.at): v.state for v in verdicts}
    assert states == {("a", "1x"): "ok", ("a", "9x"): "new", ("b", "1x"): "missing"}
    text = compare.report(verdicts, 0.15)
    assert "missing: committed, not measured in this run" in text and "new: no committed figure" in text


def test_a_table_without_the_marker_or_with_other_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="no <!--"):
        parse_table("| key | at |\n|---|---|\n")
    with pytest.raises(ValueError, match="columns"):
        parse_table(f"{compare.MARKER}\n| key | at |\n|---|---|\n| a | 1x |\n")


def test_a_saved_run_exits_1_when_a_figure_regressed_and_0_within_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = " | ".join(compare.COLUMNS)
    table = tmp_path / "benchmarks.md"
    table.write_text(
        f"# x\n\n{compare.MARKER}\n| {header} |\n|{'---|' * len(compare.COLUMNS)}\n"
        "| `lag_cpu.cpu_per_commit` | 2000/s | 8.8 | µs | Burrow 1.2.1 | 36.4 | 0.24 | lower | lag_cpu_bench |\n"
    )
    log = FigureLog("lag_cpu_bench")
    log.add("lag_cpu.cpu_per_commit", "2000/s", 11.2, "µs", peer=36.4)  # 0.31x: 27 % worse
    saved = tmp_path / "run.json"
    log.write(saved)
    assert read_run(saved) == ("lag_cpu_bench", log.figures)
    assert json.loads(saved.read_text())["bench"] == "lag_cpu_bench"
    assert compare.main([str(saved), "--table", str(table)]) == 1
    assert "REGRESSED" in capsys.readouterr().out
    assert compare.main([str(saved), "--table", str(table), "--threshold", "30"]) == 0
