"""The CHANGELOG reads as Keep a Changelog: an `[Unreleased]` section on top, releases cut with a date, one line per
change with a pointer to the doc that holds the detail, and the newest release is pyproject's version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CHANGELOG = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
MAX_ENTRY = 200


def test_unreleased_comes_first_then_dated_releases() -> None:
    headings = re.findall(r"^## (.+)$", CHANGELOG, flags=re.MULTILINE)
    assert headings[0] == "[Unreleased]"
    assert all(re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", h) for h in headings[1:]), headings


def test_the_newest_release_is_the_package_version() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", CHANGELOG, flags=re.MULTILINE)
    assert releases[0] == version


def test_each_entry_is_one_line_with_a_docs_pointer() -> None:
    lines = CHANGELOG.splitlines()
    entries = [line for line in lines if line.startswith("- ")]
    continued = [line for line in lines if line.startswith("  ")]
    assert continued == [], "one line per change: the detail goes to the doc the entry points to"
    long = [entry for entry in entries if len(entry) > MAX_ENTRY]
    assert long == [], f"entries over {MAX_ENTRY} characters"
    assert [entry for entry in entries if "docs/" not in entry] == [], "each entry points to a doc"
