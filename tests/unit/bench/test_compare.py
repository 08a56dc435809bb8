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
from figures import Figure, FigureLog, Run, read_run

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


# (committed: ours, peer, better; now: ours, peer; state): 15 % is the line, in the figure's direction, and against
# the peer of the same run where the figure has one
VERDICTS = [
    pytest.param(10, None, "lower", 11.6, None, "REGRESSED", id="16 % slower"),
    pytest.param(10, None, "lower", 11.4, None, "ok", id="14 % slower"),
    pytest.param(10, None, "lower", 5.0, None, "ok", id="twice as fast"),
    pytest.param(100, None, "higher", 84, None, "REGRESSED", id="throughput 16 % down"),
    pytest.param(100, None, "higher", 86, None, "ok", id="throughput 14 % down"),
    pytest.param(100, None, "higher", 200, None, "ok", id="throughput doubled"),
    pytest.param(8, 20, "lower", 12, 30, "ok", id="a slower host: both 50 % up"),
    pytest.param(8, 20, "lower", 8, 20 / 1.16, "REGRESSED", id="the peer got cheaper"),
    pytest.param(8, 20, "lower", 8 * 1.14, 20, "ok", id="ours 14 % up, the peer not"),
    pytest.param(8, 20, "lower", 8 * 1.16, 20, "REGRESSED", id="ours 16 % up, the peer not"),
    pytest.param(8, 20, "lower", 20, None, "missing", id="committed with a peer, measured without"),
]


@pytest.mark.parametrize(("was", "was_peer", "better", "now", "now_peer", "state"), VERDICTS)
def test_a_figure_flags_beyond_15_percent_worse_in_its_direction(
    was: float, was_peer: float | None, better: str, now: float, now_peer: float | None, state: str
) -> None:
    figure = Figure("k", "1x", now, "s", better, now_peer)  # type: ignore[arg-type]
    assert verdict(committed(value=was, peer=was_peer, better=better), figure).state == state


@pytest.mark.parametrize(
    ("committed_value", "now", "better", "worse"),
    [(100, 116, "lower", 0.16), (100, 50, "lower", -0.5), (100, 84, "higher", 0.16), (100, 200, "higher", -1.0)],
)
def test_worse_by_is_the_fraction_worse_in_the_figures_direction(
    committed_value: float, now: float, better: str, worse: float
) -> None:
    assert worse_by(committed_value, now, better) == pytest.approx(worse)  # type: ignore[arg-type]


def test_a_figure_not_measured_is_reported_missing_and_one_at_another_scale_new() -> None:
    table = [committed("a", bench="lag_bench"), committed("b", bench="lag_bench"), committed("c", bench="other")]
    verdicts = compare.compare(table, "lag_bench", [Figure("a", "1x", 10, "s"), Figure("a", "9x", 1, "s")], 0.15)
    states = {(v.key, v.at): v.state for v in verdicts}
    assert states == {("a", "1x"): "ok", ("a", "9x"): "new", ("b", "1x"): "missing"}
    text = compare.report(verdicts, 0.15)
    assert "missing: committed, not measured in this run" in text and "new: no committed figure" in text


def test_committed_figures_at_a_scale_the_run_did_not_touch_are_named_not_missing() -> None:
    table = [committed("a", bench="b"), Committed("a", "2x", 1, "s", "-", None, None, "lower", "b")]
    run = [Figure("a", "1x", 10, "s")]
    assert [(v.key, v.at, v.state) for v in compare.compare(table, "b", run, 0.15)] == [("a", "1x", "ok")]
    assert compare.other_scales(table, "b", run) == ["2x"]
    assert compare.other_scales(table, "b", [*run, Figure("a", "2x", 1, "s")]) == []


def test_a_table_without_the_marker_or_with_other_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="no <!--"):
        parse_table("| key | at |\n|---|---|\n")
    with pytest.raises(ValueError, match="columns"):
        parse_table(f"{compare.MARKER}\n| key | at |\n|---|---|\n| a | 1x |\n")


def table_of(*rows: str) -> str:
    return f"{compare.MARKER}\n| {' | '.join(compare.COLUMNS)} |\n|{'---|' * len(compare.COLUMNS)}\n" + "".join(
        f"{row}\n" for row in rows
    )


GOOD = "| `a.rss` | 1x | 3,245 | MiB | pandas | 6,503 | 0.50x | lower | slo_bench | slo: the same, peak RSS |"


@pytest.mark.parametrize(
    ("rows", "error"),
    [
        ((GOOD.replace("lower", "smaller"),), "better is 'smaller'"),
        ((GOOD.replace("3,245", "-"),), "no figure"),
        ((GOOD.replace(" slo_bench |", ""),), "a row of 9 cells"),
        ((GOOD, GOOD.replace("6,503", "6,000")), "twice at the same scale"),
    ],
)
def test_a_malformed_committed_row_is_refused_with_its_reason(rows: tuple[str, ...], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_table(table_of(*rows))


def test_a_committed_row_reads_its_numbers_with_commas_and_an_x() -> None:
    (row,) = parse_table(table_of(GOOD))
    assert (row.key, row.value, row.peer, row.ratio, row.better) == ("a.rss", 3245, 6503, 0.5, "lower")
    assert row.shown_in == "slo: the same, peak RSS" and row.computed_ratio == pytest.approx(3245 / 6503)


def test_a_saved_run_exits_1_when_a_figure_regressed_and_0_within_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = " | ".join(compare.COLUMNS)
    table = tmp_path / "benchmarks.md"
    table.write_text(
        f"# x\n\n{compare.MARKER}\n| {header} |\n|{'---|' * len(compare.COLUMNS)}\n"
        "| `lag_cpu.cpu_per_commit` | 2000/s | 8.8 | µs | Burrow 1.2.1 | 36.4 | 0.24 | lower | lag_cpu_bench | - |\n"
    )
    log = FigureLog("lag_cpu_bench")
    log.add("lag_cpu.cpu_per_commit", "2000/s", 11.2, "µs", peer=36.4)  # 0.31x: 27 % worse
    saved = tmp_path / "run.json"
    log.write(saved)
    again = read_run(saved)
    assert (again.bench, again.figures) == ("lag_cpu_bench", log.figures) and again.load is not None
    assert json.loads(saved.read_text())["bench"] == "lag_cpu_bench"
    assert compare.main([str(saved), "--table", str(table)]) == 1
    assert "REGRESSED" in capsys.readouterr().out
    assert compare.main([str(saved), "--table", str(table), "--threshold", "30"]) == 0


def test_several_saved_runs_compare_in_one_call_and_any_regression_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = " | ".join(compare.COLUMNS)
    table = tmp_path / "benchmarks.md"
    table.write_text(
        f"{compare.MARKER}\n| {header} |\n|{'---|' * len(compare.COLUMNS)}\n"
        "| `a.wall` | 1x | 1.0 | s | - | - | - | lower | bench_a | - |\n"
        "| `b.rate` | 1x | 100 | /s | - | - | - | higher | bench_b | - |\n"
    )
    runs = {"bench_a": ("a.wall", 1.05, "lower"), "bench_b": ("b.rate", 80.0, "higher")}  # b: 20 % down
    paths = []
    for bench, (key, value, better) in runs.items():
        log = FigureLog(bench)
        log.add(key, "1x", value, "s", better)  # type: ignore[arg-type]
        log.write(tmp_path / f"{bench}.json")
        paths.append(str(tmp_path / f"{bench}.json"))
    assert compare.main([*paths, "--table", str(table)]) == 1
    out = capsys.readouterr().out
    assert "bench_a against" in out and "bench_b against" in out and "1 regressed beyond 15 %: b.rate at 1x" in out
    assert compare.main([paths[0], "--table", str(table)]) == 0


ALONE, BESIDE = Figure("k", "1x", 1, "s"), Figure("k", "1x", 1, "s", peer=2)


@pytest.mark.parametrize(
    ("load", "cores", "figure", "note"),
    [
        (None, None, ALONE, "host load: not recorded"),  # a run saved before the load was
        (1.5, 2, ALONE, "host load at the end: 1.5 on 2 cores"),
        (8.9, 2, ALONE, "host load at the end: 8.9 on 2 cores (loaded: "),
        (8.9, 2, BESIDE, "host load at the end: 8.9 on 2 cores"),  # every figure a ratio to a same-run peer
    ],
)
def test_the_hosts_load_is_named_and_a_loaded_run_without_peers_called_doubtful(
    load: float | None, cores: int | None, figure: Figure, note: str
) -> None:
    text = compare.load_note(Run("b", [figure], load, cores))
    assert text.startswith(note) and (("loaded" in text) == ("loaded" in note))


def test_a_run_saved_without_the_load_still_reads(tmp_path: Path) -> None:
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps({"bench": "b", "figures": [{"key": "k", "at": "1x", "value": 1, "unit": "s"}]}))
    assert read_run(saved) == Run("b", [Figure("k", "1x", 1.0, "s")])
