"""The README stays a front page: at most 1,500 words, one short line per area in its status table, settings
linked rather than restated (docs/config.md is generated from the models), every command in its table."""

from __future__ import annotations

import re
from pathlib import Path

from click import Group

from kafka_pulse.cli.main import cli

REPO = Path(__file__).resolve().parents[3]
README = (REPO / "README.md").read_text(encoding="utf-8")
MAX_WORDS = 1_500
MAX_STATUS_ROW = 120


def section(title: str) -> str:
    """The README's text under `## title`, up to the next `## `."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_at_most_1500_words() -> None:
    words = len(README.split())
    assert words <= MAX_WORDS, f"README.md has {words} words; move detail to docs/ and link it"


def test_each_status_row_is_one_short_line_with_a_pointer() -> None:
    rows = [line for line in section("Status").splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 10
    long = [row for row in rows if len(row) > MAX_STATUS_ROW]
    assert long == [], f"status rows over {MAX_STATUS_ROW} characters (detail goes to docs/features.md)"
    assert all("docs/" in row for row in rows), "each status row points to the doc that has the detail"


def test_the_readme_links_the_generated_config_reference_instead_of_restating_keys() -> None:
    assert "docs/config.md" in section("Config")
    for restated in ("offset_refresh_s", "stale_after_s", "switch_interval_s", "collectors.shard"):
        assert restated not in README


def test_the_command_table_names_every_command() -> None:
    table = section("Command line (public contract)")
    commands = set()
    for name, command in cli.commands.items():
        if isinstance(command, Group):
            commands |= {f"{name} {sub}" for sub in command.commands}
        else:
            commands.add(name)
    missing = [c for c in sorted(commands) if not re.search(rf"`{re.escape(c)}[ `]", table)]
    kill_family = {"dev kill", "dev pause", "dev resume", "dev restart"}
    missing = [c for c in missing if not (c in kill_family and "`dev kill\\|pause\\|resume\\|restart NODE`" in table)]
    assert missing == [], f"commands missing from the README's command table: {missing}"
