"""Edits that break one key of a valid config tree, and the lines it is then refused with: the rows of the config
validation tables (after Sloth's: start from one valid object, break one field, assert the exact message)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pulse.config import parse_config
from pulse.errors import ConfigError

Edit = Callable[[dict[str, Any]], None]
"""Mutates a config tree (the parsed YAML) in place."""


@dataclass(frozen=True)
class Case:
    """One row of a validation table."""

    breaks: Edit
    """Mutates the valid config in place."""
    want: str
    """The one message line expected, after `pulse.yaml: `."""


def set_key(*path: str | int, value: Any) -> Edit:
    """Sets the key at `path` (mapping keys and list indexes) to `value`, creating missing mappings on the way."""

    def apply(tree: dict[str, Any]) -> None:
        node: Any = tree
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
        node[path[-1]] = value

    return apply


def delete_key(*path: str | int) -> Edit:
    """Deletes the key at `path`."""

    def apply(tree: dict[str, Any]) -> None:
        node: Any = tree
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return apply


def both(*edits: Edit) -> Edit:
    """Applies `edits` in order, for a break that takes more than one key."""

    def apply(tree: dict[str, Any]) -> None:
        for edit in edits:
            edit(tree)

    return apply


def refusal_lines(
    tree: dict[str, Any], environ: Mapping[str, str] | None = None, base_dir: Path | None = None
) -> list[str]:
    """The message lines `tree`, written to `pulse.yaml`, is refused with; the test fails if it is accepted."""
    with pytest.raises(ConfigError) as excinfo:
        parse_config(yaml.safe_dump(tree), "pulse.yaml", environ or {}, base_dir=base_dir)
    return str(excinfo.value).splitlines()
