"""No reruns: a test that fails under load names a defect to find (docs/testing.md, "No reruns"). The rerun plugin is
blocked in pytest's options, so a `flaky` mark is an unknown marker under `--strict-markers` even where the plugin is
installed, and no test carries one."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MARK = "mark." + "flaky"
"""Spelt in two parts so this file does not find itself."""


def test_no_test_carries_a_rerun_mark() -> None:
    marked = [str(p.relative_to(REPO)) for p in sorted((REPO / "tests").rglob("*.py")) if MARK in p.read_text()]
    assert marked == []


def test_the_rerun_plugin_is_neither_required_nor_loaded() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = [r for reqs in project["project"]["optional-dependencies"].values() for r in reqs]
    assert not [r for r in extras if "rerunfailures" in r]
    assert "-p no:rerunfailures" in project["tool"]["pytest"]["ini_options"]["addopts"]
