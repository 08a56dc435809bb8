"""Rule table through `kafka-pulse lag replay`, in all three modes (Burrow's caching_test.go style).

Each row is one partition's history in a small notation: `bT:O` is a HWM sample O at T seconds, `cT:O` a commit of
offset O at T seconds (topic t, partition 0, group g, cluster c); the group is evaluated at `now` seconds. `want` is the
partition status in burrow / burrow-1.2 / enhanced; `#N` in a row's comment is linkedin/Burrow issue or PR N. Defaults:
intervals 5, offset-refresh 10 s (so the enhanced warm-up is 50 s). Lag at ingest = the newest HWM sample before the
commit minus the commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kafka_pulse.cli.main import cli
from lag.replay import parse_line
from lag.service import new_evaluator
from pulse.config import LagConfig
from tests.support.lag_reference import evaluate_group_reference

MODES = ("burrow", "burrow-1.2", "enhanced")


def steady(offsets: list[int], lags: list[int], start_s: int = 100, step_s: int = 100) -> str:
    """Commits `offsets` every `step_s`, each just after a HWM sample that gives it `lags[i]`."""
    parts = []
    for i, (o, lag) in enumerate(zip(offsets, lags, strict=True)):
        t = start_s + i * step_s
        parts += [f"b{t}:{o + lag}", f"c{t}:{o}"]
    return " ".join(parts)


def tail(hwm: int, times: range) -> str:
    return " ".join(f"b{t}:{hwm}" for t in times)


UP5 = [1000, 2000, 3000, 4000, 5000]
T0 = steady(UP5, [0, 50, 100, 150, 200])  # Burrow test 0: zero lag at the start of the window
T3 = steady(UP5, [50, 100, 150, 200, 250])  # Burrow test 3: lag always non-zero and growing
FLUSH5200 = tail(5200, range(510, 560, 10))  # rolls the broker ring past every caught-up sample
QUIET = steady(UP5, [0, 0, 0, 0, 0]) + " " + tail(5000, range(1960, 2000, 10)) + " b2000:5001"
SAW = "b0:1000 b30:1300 c35:780 c40:820 c45:860 c50:900 c55:940 b60:1600"
EOS = steady([1000] * 5, [1] * 5) + " b510:1001"


@dataclass(frozen=True)
class Case:
    events: str
    now: int
    want: tuple[str, str, str]
    options: tuple[str, ...] = field(default=())


CASES = [
    pytest.param(Case(steady(UP5, [0] * 5), 600, ("OK", "OK", "OK")), id="caught-up"),
    # Burrow test 0: lag now 200, but a zero-lag commit in the window -> OK everywhere
    pytest.param(Case(T0 + " " + FLUSH5200, 600, ("OK", "OK", "OK")), id="zero-lag-in-window"),
    # Burrow test 1: silence 400 s equals the window span 400 s; STOP needs strictly more
    pytest.param(Case(T0 + " " + FLUSH5200, 900, ("OK", "OK", "OK")), id="silence-equal-to-span-not-stop"),
    # Burrow test 2 (#290): STOP beats the old zero-lag entry once the silence exceeds the span
    pytest.param(Case(T0 + " " + FLUSH5200, 1000, ("STOP", "STOP", "STOP")), id="stop-despite-old-zero-lag"),
    # Burrow test 3: lag always non-zero, silence 500 s > span 400 s
    pytest.param(Case(T3 + " " + tail(5250, range(510, 560, 10)), 1000, ("STOP",) * 3), id="stop-lag-never-zero"),
    # Burrow test 10 (#303): a HWM sample <= the last commit in the broker ring is Burrow's grace against STOP;
    # enhanced sees records waiting 500 s > span 400 s and says STOP
    pytest.param(Case(T0, 1000, ("OK", "OK", "STOP")), id="broker-grace-vs-waiting-records"),
    # current lag 0 at evaluation: never an error, however long the silence
    pytest.param(Case(T0 + " " + tail(5000, range(510, 560, 10)), 1000, ("OK",) * 3), id="zero-current-lag-no-stop"),
    # Burrow test 5: same offset, lag always > 0 -> STALL
    pytest.param(Case(steady([1000] * 5, [100, 150, 200, 250, 300]), 600, ("STALL",) * 3), id="stall"),
    # Burrow test 6: STALL also when the lag stays the same
    pytest.param(Case(steady([1000] * 5, [100] * 5), 600, ("STALL",) * 3), id="stall-flat-lag"),
    # Burrow test 4: same offset but a zero-lag entry in the window -> OK (one more commit would make it STALL)
    pytest.param(Case(steady([1000] * 5, [0, 50, 100, 150, 200]), 600, ("OK",) * 3), id="stall-suppressed-by-zero"),
    # Burrow test 3 shape evaluated early: offsets advance, lag grows -> WARN
    pytest.param(Case(T3, 600, ("WARN",) * 3), id="warn-lag-growing"),
    # equal lag steps count as "not decreasing" (Burrow rule 5)
    pytest.param(Case(steady(UP5, [100] * 5), 600, ("WARN",) * 3), id="warn-equal-lag"),
    pytest.param(Case(steady(UP5, [500, 400, 300, 200, 100]), 600, ("OK",) * 3), id="lag-decreasing-ok"),
    # Burrow test 7: a rewind that recovered is forgiven in HEAD (PR #716), REWIND in 1.2.1
    pytest.param(
        Case(steady([1000, 2000, 3000, 2000, 4000], [100, 90, 80, 1100, 60]), 600, ("OK", "REWIND", "OK")),
        id="rewind-recovered",
    ),
    pytest.param(
        Case(steady([1000, 2000, 3000, 4000, 2500], [100, 100, 100, 100, 1700]), 600, ("REWIND",) * 3),
        id="rewind-unrecovered",
    ),
    # PR #716: HEAD detects a rewind even with zero lag in the history; 1.2.1's zero-lag rule hides it
    pytest.param(
        Case(steady([1000, 2000, 3000, 4000, 500], [0, 0, 0, 0, 3500]), 600, ("REWIND", "OK", "REWIND")),
        id="rewind-after-zero-lag",
    ),
    # #570 EOS: lag 1 forever (the marker); allowed-lag 1 fixes HEAD, 1.2.1 has no allowance
    pytest.param(Case(EOS, 600, ("OK", "STALL", "OK"), ("--allowed-lag", "1")), id="eos-allowed-lag"),
    # enhanced needs no allowance: lag 1 with no record produced since the commit is the marker
    pytest.param(Case(EOS, 600, ("STALL", "STALL", "OK")), id="eos-marker-aware"),
    # #38: a quiet topic, one record arrives at 2000 s; 45 s later Burrow's broker ring has rolled past the
    # caught-up samples -> STOP; enhanced waits the window span (400 s) of waiting records
    pytest.param(
        Case(QUIET + " " + tail(5001, range(2010, 2050, 10)), 2045, ("STOP", "STOP", "OK")), id="quiet-topic-idle"
    ),
    pytest.param(
        Case(QUIET + " " + tail(5001, range(2010, 2050, 10)), 2500, ("STOP",) * 3), id="quiet-topic-then-stopped"
    ),
    # V14: one commit has span 0, so Burrow says STOP a second later; enhanced warms up for 5 x 10 s
    pytest.param(Case("b100:1000 c100:900", 101, ("STOP", "STOP", "OK")), id="new-group-warm-up"),
    pytest.param(Case("b100:1000 c100:900", 200, ("STOP",) * 3), id="new-group-warm-up-over"),
    # #155: HWM sampled every 30 s, commits every 5 s; the stale HWM makes the stored lag fall (sawtooth) while
    # the real lag grows; enhanced recomputes lag against the HWM interpolated at each commit
    pytest.param(Case(SAW, 61, ("OK", "OK", "WARN")), id="stale-hwm-sawtooth"),
    # minimum-complete: 3 of 5 cells filled < 1.0 -> OK without rules (else WARN)
    pytest.param(
        Case(steady(UP5[:3], [50, 100, 150]), 400, ("OK",) * 3, ("--minimum-complete", "1")), id="minimum-complete"
    ),
    pytest.param(Case(steady(UP5[:3], [50, 100, 150]), 400, ("WARN",) * 3), id="incomplete-window-judged"),
    # min-distance 60 s merges three commits into one cell: Burrow sees one lagging cell = STALL
    pytest.param(
        Case(
            "b0:1000 c0:900 b10:1100 c10:950 b20:1200 c20:1000", 25, ("STALL", "STALL", "OK"), ("--min-distance", "60")
        ),
        id="min-distance-merge",
    ),
    # #370: a commit before any HWM sample is dropped, so the group does not exist
    pytest.param(Case("c100:1000 b110:1200", 120, ("NOTFOUND",) * 3), id="commit-before-hwm-dropped"),
]


def to_jsonl(events: str, now_s: int) -> str:
    lines = []
    for event in events.split():
        kind, rest = event[0], event[1:]
        t, offset = (int(x) for x in rest.split(":"))
        common = {"t": t * 1000, "cluster": "c", "topic": "t", "partition": 0, "offset": offset}
        if kind == "b":
            lines.append({**common, "type": "broker"})
        else:
            lines.append({**common, "type": "commit", "group": "g"})
    lines.append({"t": now_s * 1000, "type": "evaluate", "cluster": "c", "group": "g"})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def run_replay(tmp_path: Path, text: str, *options: str) -> list[dict[str, Any]]:
    path = tmp_path / "in.jsonl"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["lag", "replay", "--input", str(path), *options])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("mode_index", range(3), ids=MODES)
@pytest.mark.parametrize("case", CASES)
def test_rule_table(tmp_path: Path, case: Case, mode_index: int) -> None:
    mode = MODES[mode_index]
    text = to_jsonl(case.events, case.now)
    [status] = run_replay(tmp_path, text, "--mode", mode, "--intervals", "5", "--offset-refresh", "10", *case.options)
    want = case.want[mode_index]
    if want == "NOTFOUND":
        assert status["status"] == "NOTFOUND"
        assert status["partitions"] == []
        return
    [partition] = status["partitions"]
    assert partition["status"] == want, partition.get("reason", partition)
    group_want = "ERR" if want in ("STOP", "STALL", "REWIND") else want
    assert status["status"] == group_want
    assert set(status) >= {
        "cluster",
        "group",
        "status",
        "complete",
        "partitions",
        "partition_count",
        "maxlag",
        "totallag",
    }


_SETTINGS = {"--allowed-lag": ("allowed_lag", int), "--minimum-complete": ("minimum_complete", float)}
_SETTINGS |= {"--min-distance": ("min_distance_s", float)}


@pytest.mark.parametrize("mode_index", range(3), ids=MODES)
@pytest.mark.parametrize("case", CASES)
def test_rule_table_columnar_path_equals_the_scalar_reference(case: Case, mode_index: int) -> None:
    """`lag replay` evaluates through the columnar path; the scalar rules give the identical status object."""
    options = {_SETTINGS[k][0]: _SETTINGS[k][1](v) for k, v in zip(case.options[::2], case.options[1::2], strict=True)}
    settings = LagConfig(mode=MODES[mode_index], intervals=5, offset_refresh_s=10, **options)  # type: ignore[arg-type]
    evaluator = new_evaluator(settings)
    store = evaluator.store
    for line in to_jsonl(case.events, case.now).splitlines():
        r = parse_line(line)
        if r["type"] == "broker":
            store.add_hwm(r["cluster"], r["topic"], r["partition"], r["offset"], r["t"])
        elif r["type"] == "commit":
            store.add_commit(r["cluster"], r["group"], r["topic"], r["partition"], r["offset"], r["t"], r["t"])
        else:
            fast = evaluator.evaluate_group(r["cluster"], r["group"], r["t"])
            assert fast == evaluate_group_reference(evaluator, r["cluster"], r["group"], r["t"])
            want = case.want[mode_index]
            assert fast.status.name == (want if want in ("OK", "WARN", "NOTFOUND") else "ERR")


def test_at_least_twenty_scenarios() -> None:
    assert len(CASES) >= 20
