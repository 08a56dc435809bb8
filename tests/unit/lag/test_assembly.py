"""`LagRunner` applies `lag.switch_interval_s` to the interpreter while it runs and gives the previous interval back
on stop (issue #15; docs/benchmarks.md, "Status while ingesting")."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lag.assembly import LagRunner, SwitchInterval
from pulse.config import PulseConfig, parse_config

BEFORE_S = 0.007
"""An interval no test sets, so that a restore to it is seen (Python's default is 0.005)."""


@pytest.fixture(autouse=True)
def interpreter_interval() -> Iterator[None]:
    """Every test starts from `BEFORE_S`; the interpreter gets back its own afterwards, whatever the test did."""
    own = sys.getswitchinterval()
    sys.setswitchinterval(BEFORE_S)
    try:
        yield
    finally:
        sys.setswitchinterval(own)


def interval_is(want_s: float) -> bool:
    """The interpreter keeps the interval in whole microseconds, truncated (0.007 reads back as 0.006999)."""
    return sys.getswitchinterval() == pytest.approx(want_s, abs=1e-6)


def runner(lag: dict[str, Any], tmp_path: Path) -> LagRunner:
    """A runner without clusters: start and stop touch no Kafka, and the evaluation log is off."""
    tree = {"lag": {"evaluation_log": {"enabled": False}, **lag}}
    config: PulseConfig = parse_config(yaml.safe_dump(tree), "pulse.yaml", {})
    return LagRunner(config, [], state=tmp_path)


def test_the_runner_applies_the_configured_interval_while_it_runs(tmp_path: Path) -> None:
    lag = runner({"switch_interval_s": 0.0005}, tmp_path)
    assert interval_is(BEFORE_S)  # building connects and changes nothing
    lag.start()
    try:
        assert interval_is(0.0005)
    finally:
        lag.stop()
    assert interval_is(BEFORE_S)


def test_the_default_is_two_milliseconds(tmp_path: Path) -> None:
    lag = runner({}, tmp_path)
    lag.start()
    try:
        assert interval_is(0.002)
    finally:
        lag.stop()


def test_none_leaves_the_interpreter_alone(tmp_path: Path) -> None:
    lag = runner({"switch_interval_s": None}, tmp_path)
    lag.start()
    assert interval_is(BEFORE_S)
    sys.setswitchinterval(0.003)  # someone else's setting, made while lag runs, is not undone by its stop
    lag.stop()
    assert interval_is(0.003)


def test_a_second_stop_restores_nothing_more() -> None:
    """`Parts` may stop a part that failed half-way again; the interval given back once stays given back."""
    interval = SwitchInterval(0.002)
    interval.start()
    interval.stop()
    sys.setswitchinterval(0.004)
    interval.stop()
    assert interval_is(0.004)


def test_pyarrow_is_loaded_only_for_an_enabled_evaluation_log(tmp_path: Path) -> None:
    """#27: pyarrow is about 30 MB resident; a `kafka-pulse lag` whose evaluation log is off never imports it, nor
    httpx without incidents (a fresh interpreter, since this one may have loaded them for another test)."""
    code = (
        "import sys, yaml; from pathlib import Path; import kafka_pulse.cli.lag; from lag.assembly import LagRunner; "
        "from pulse.config import parse_config; "
        "tree = {'lag': {'evaluation_log': {'enabled': sys.argv[1] == 'on'}}}; "
        "config = parse_config(yaml.safe_dump(tree), 'pulse.yaml', {}); "
        "runner = LagRunner(config, [], state=Path(sys.argv[2])); "
        "print(runner.evaluation_log is not None, 'pyarrow' in sys.modules, 'httpx' in sys.modules)"
    )
    seen = {}
    for setting in ("off", "on"):
        done = subprocess.run(
            [sys.executable, "-c", code, setting, str(tmp_path)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        seen[setting] = done.stdout.split()
    assert seen == {"off": ["False", "False", "False"], "on": ["True", "True", "False"]}
