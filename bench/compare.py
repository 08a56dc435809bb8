"""Regression guard: a bench run's figures beside the ones committed in docs/benchmarks.md.

Flags any figure more than 15 % worse than its committed one: its ratio against the peer of the same run where the
figure has a peer, else the figure itself in its direction (lower or higher is better).

Run: python bench/compare.py [--threshold 15] [--table docs/benchmarks.md] FIGURES.json [FIGURES.json ...]
     python bench/compare.py [--threshold 15] [--table docs/benchmarks.md] [--save FILE] --run BENCH [bench args...]

`--run lag_cpu_bench --seconds 15` runs `python bench/lag_cpu_bench.py --seconds 15 --figures-out TMP` (FILE with
`--save`) and compares what it wrote; FIGURES.json are such files saved earlier, one block per bench run. The
committed figures are the table under the marker `<!-- compare.py: committed figures -->` in docs/benchmarks.md
(section "Where we stand"; bench/standing.py keeps it in agreement with the tables above it). A figure is compared
only at the scale it was committed at (its `at`); committed figures at a scale the run measured but missing from it
are listed as missing, other scales only named. Exit 1 when a figure regressed beyond the threshold, 2 when the
bench failed, else 0.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from figures import Better, Figure, Run, read_run

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "docs" / "benchmarks.md"
MARKER = "<!-- compare.py: committed figures -->"
COLUMNS = ("key", "at", "ours", "unit", "peer", "peer's figure", "ratio", "better", "bench", "shown in")


@dataclass(frozen=True)
class Committed:
    """One row of the committed-figures table."""

    key: str
    at: str
    value: float
    unit: str
    peer_name: str
    peer: float | None
    ratio: float | None
    better: Better
    bench: str
    shown_in: str = "-"  # the "Where we stand" row showing the figure too (bench/standing.py checks they agree)

    @property
    def computed_ratio(self) -> float | None:
        return None if self.peer is None else self.value / self.peer


@dataclass(frozen=True)
class Verdict:
    """A committed figure beside the run's: `worse` is the fraction by which the run is worse (negative: better)."""

    key: str
    at: str
    committed: Committed | None
    now: Figure | None
    worse: float | None
    state: str  # "ok", "REGRESSED", "missing" (committed, not measured), "new" (measured, not committed)


def _number(cell: str) -> float | None:
    text = cell.strip().replace(",", "").removesuffix("x")
    return None if text in ("", "-") else float(text)


def parse_table(markdown: str) -> list[Committed]:
    """The committed figures: the first markdown table after the marker, its columns exactly `COLUMNS`."""
    lines = markdown.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == MARKER)
    except StopIteration:
        raise ValueError(f"no {MARKER} in the table file") from None
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append([c.strip().strip("`") for c in line.strip().strip("|").split("|")])
        elif table:
            break
    if not table or tuple(table[0]) != COLUMNS:
        raise ValueError(f"the committed-figures table must have the columns {' | '.join(COLUMNS)}")
    rows = []
    for cells in table[2:]:
        if len(cells) != len(COLUMNS):
            raise ValueError(f"a row of {len(cells)} cells, want {len(COLUMNS)}: {cells}")
        key, at, ours, unit, peer_name, peer, ratio, better, bench, shown_in = cells
        if better not in ("lower", "higher"):
            raise ValueError(f"{key} at {at}: better is {better!r}, want lower or higher")
        value = _number(ours)
        if value is None:
            raise ValueError(f"{key} at {at}: no figure")
        rows.append(
            Committed(
                key, at, value, unit, peer_name, _number(peer), _number(ratio), cast(Better, better), bench, shown_in
            )
        )
    seen = [(r.key, r.at) for r in rows]
    if len(seen) != len(set(seen)):
        raise ValueError("a key appears twice at the same scale")
    return rows


def worse_by(committed: float, now: float, better: Better) -> float:
    """How much worse `now` is than `committed`, as a fraction (0.16: 16 % worse; negative: better)."""
    return now / committed - 1 if better == "lower" else 1 - now / committed


def compare(committed: list[Committed], bench: str, run: list[Figure], threshold: float) -> list[Verdict]:
    """Each figure of the run beside its committed one (ratio against ratio where both have a peer)."""
    table = {(c.key, c.at): c for c in committed}
    verdicts = []
    for figure in run:
        was = table.get((figure.key, figure.at))
        if was is None:
            verdicts.append(Verdict(figure.key, figure.at, None, figure, None, "new"))
            continue
        then, now = (was.computed_ratio, figure.ratio) if was.peer is not None else (was.value, figure.value)
        if then is None or now is None:  # committed with a peer, measured without one
            verdicts.append(Verdict(figure.key, figure.at, was, figure, None, "missing"))
            continue
        worse = worse_by(then, now, was.better)
        verdicts.append(Verdict(figure.key, figure.at, was, figure, worse, "REGRESSED" if worse > threshold else "ok"))
    measured, scales = {(f.key, f.at) for f in run}, {f.at for f in run}
    for was in committed:
        if was.bench == bench and was.at in scales and (was.key, was.at) not in measured:
            verdicts.append(Verdict(was.key, was.at, was, None, None, "missing"))
    return verdicts


def other_scales(committed: list[Committed], bench: str, run: list[Figure]) -> list[str]:
    """The scales the bench has committed figures at that the run did not touch (`--groups 200` beside 500): not
    compared and not missing either, only named, so a run at one scale does not list every other one's rows."""
    scales = {f.at for f in run}
    return sorted({c.at for c in committed if c.bench == bench and c.at not in scales})


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def report(verdicts: list[Verdict], threshold: float) -> str:
    """A plain table: the committed figure, the run's, the ratios against the peer and the verdict."""
    head = (
        "key",
        "at",
        "committed",
        "now",
        "unit",
        "peer then",
        "peer now",
        "ratio then",
        "ratio now",
        "worse",
        "verdict",
    )
    rows = [head]
    for v in verdicts:
        c, n = v.committed, v.now
        state = v.state
        if v.state == "REGRESSED":
            state = f"REGRESSED (> {threshold:.0%} worse)"
        elif v.state == "missing":
            state = "missing: committed, not measured in this run"
        elif v.state == "new":
            state = "new: no committed figure at this scale"
        rows.append(
            (
                v.key,
                v.at,
                _fmt(c.value if c else None),
                _fmt(n.value if n else None),
                (c.unit if c else n.unit if n else "") + (f" ({c.better} is better)" if c else ""),
                _fmt(c.peer if c else None),
                _fmt(n.peer if n else None),
                _fmt(c.computed_ratio if c else None),
                _fmt(n.ratio if n else None),
                "-" if v.worse is None else f"{v.worse:+.0%}",
                state,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def load_note(run: Run) -> str:
    """The host's load as the run ended: above one a core, the run's figures without a peer are doubtful (the check's
    import wall went 0.50 -> 0.75 s at load 7 with the code unchanged); ratios against a same-run peer hold better."""
    if run.load is None or run.cores is None:
        return "host load: not recorded"
    note = f"host load at the end: {run.load:.1f} on {run.cores} cores"
    if run.load > run.cores and any(f.peer is None for f in run.figures):
        note += " (loaded: a figure without a peer moves with the load; run again before believing a flag on one)"
    return note


def run_bench(bench: str, args: list[str], out: Path) -> int:
    """Runs bench/BENCH.py with `--figures-out OUT`, its output passed through."""
    script = REPO / "bench" / f"{Path(bench).stem}.py"
    if not script.is_file():
        raise SystemExit(f"no bench {script}")
    return subprocess.run([sys.executable, str(script), *args, "--figures-out", str(out)], cwd=REPO).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    bench_argv: list[str] | None = None
    if "--run" in argv:
        at = argv.index("--run")
        argv, bench_argv = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        usage="%(prog)s [--threshold PCT] [--table FILE] (FIGURES.json ... | [--save FILE] --run BENCH [bench args])",
    )
    parser.add_argument("figures", nargs="*", type=Path, help="saved runs (benches' --figures-out files)")
    parser.add_argument("--threshold", type=float, default=15.0, help="percent worse that flags (default 15)")
    parser.add_argument("--table", type=Path, default=TABLE, help="the file holding the committed figures")
    parser.add_argument("--save", type=Path, help="with --run: keep the run's figures in FILE, to compare again")
    args = parser.parse_args(argv)
    if (bench_argv is None) == (not args.figures):
        parser.error("give either FIGURES.json ... or --run BENCH [bench args]")
    committed = parse_table(args.table.read_text())
    paths: list[Path] = args.figures
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        if bench_argv is not None:
            if not bench_argv:
                parser.error("--run needs a bench name")
            paths = [(args.save or Path(tmp) / "figures.json").resolve()]  # the bench runs in the repo
            code = run_bench(bench_argv[0], bench_argv[1:], paths[0])
            if code != 0 or not paths[0].is_file():
                print(f"compare: the bench exited {code} without figures", file=sys.stderr)
                return 2
        runs = [read_run(path) for path in paths]
    threshold = args.threshold / 100
    table = args.table.relative_to(REPO) if args.table.is_relative_to(REPO) else args.table
    regressed: list[Verdict] = []
    for run in runs:
        verdicts = compare(committed, run.bench, run.figures, threshold)
        print(f"\n{run.bench} against {table}, {load_note(run)}:")
        print(report(verdicts, threshold))
        if others := other_scales(committed, run.bench, run.figures):
            print(f"not run at: {'; '.join(others)} (committed there, another scale than this run's)")
        regressed += [v for v in verdicts if v.state == "REGRESSED"]
    print(f"{len(regressed)} regressed beyond {args.threshold:g} %" + (": " if regressed else ""), end="")
    print(", ".join(f"{v.key} at {v.at}" for v in regressed))
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
