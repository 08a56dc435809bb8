"""The error tree drawn in pulse/errors.py's docstring is the whole tree: every PulseError subclass of the product
appears there under its real parent, and the drawing names no class that is gone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pulse.errors

REPO = Path(__file__).resolve().parents[3]
PRODUCT = ("kafka_pulse", "devstack", "collectors", "canary", "lag", "slo", "dashboards", "audit", "pulse")
ROW = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w+)\b")


def product_classes() -> dict[str, tuple[str, list[str]]]:
    """Class name -> (module path, base names) for every public class defined in the product."""
    found: dict[str, tuple[str, list[str]]] = {}
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b).split(".")[-1] for b in node.bases]
                    found[node.name] = (str(path.relative_to(REPO)), bases)
    return found


def pulse_errors() -> dict[str, str]:
    """Every PulseError subclass -> the PulseError subclass (or PulseError) it derives from."""
    classes = product_classes()
    parents: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, (_, bases) in classes.items():
            parent = next((b for b in bases if b == "PulseError" or b in parents), None)
            if name not in parents and name != "PulseError" and parent is not None:
                parents[name] = parent
                grew = True
    return parents


def drawn() -> dict[str, str]:
    """Class -> parent as the docstring's tree draws them (a row's parent is the nearest row above it that is
    indented less)."""
    doc = pulse.errors.__doc__ or ""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        row = ROW.match(line)
        if row is None or (not row["indent"] and row["name"] != "PulseError"):
            continue
        depth = len(row["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[row["name"]] = stack[-1][1]
        stack.append((depth, row["name"]))
    return parents


def test_the_drawing_is_the_whole_error_tree() -> None:
    real, drawing = pulse_errors(), drawn()
    missing = {name: parent for name, parent in real.items() if drawing.get(name) != parent}
    assert missing == {}, f"draw these in pulse/errors.py (class: its parent): {missing}"
    stale = sorted(set(drawing) - set(real))
    assert stale == [], f"pulse/errors.py draws classes that do not exist: {stale}"
