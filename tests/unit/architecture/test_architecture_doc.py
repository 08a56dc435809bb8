"""docs/architecture.md names every product module by its path (a package by its folder), and names no path that is
gone, so the module tables cannot drift from the tree. The failure lists what to add or remove."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "architecture.md"
PRODUCT = ("pulse", "collectors", "canary", "lag", "slo", "dashboards", "audit", "devstack", "kafka_pulse")


def product_modules() -> list[str]:
    """Every product module as the doc names it: `lag/store.py`, and a package as `lag/` or `pulse/config/`."""
    paths = []
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO)
            if path.name == "__init__.py":
                paths.append(f"{relative.parent.as_posix()}/")
            else:
                paths.append(relative.as_posix())
    return paths


def named_paths(text: str) -> set[str]:
    """Backticked product paths in the doc: `pkg/.../name.py` or `pkg/.../` (a package)."""
    roots = "|".join(PRODUCT)
    return set(re.findall(rf"`((?:{roots})/(?:[\w/]*\w/|[\w/]*\.py|))`", text))


def test_every_product_module_is_named_in_the_architecture_doc() -> None:
    named = named_paths(DOC.read_text(encoding="utf-8"))
    missing = [path for path in product_modules() if path not in named]
    assert missing == [], "add these modules to docs/architecture.md (one table row each):\n" + "\n".join(missing)


def test_the_architecture_doc_names_no_module_that_is_gone() -> None:
    named = named_paths(DOC.read_text(encoding="utf-8"))
    gone = sorted(path for path in named if not (REPO / path).exists())
    assert gone == [], "docs/architecture.md names paths that no longer exist:\n" + "\n".join(gone)


def test_the_module_list_covers_the_tree() -> None:
    modules = product_modules()
    assert "lag/" in modules and "pulse/config/" in modules and "kafka_pulse/status/routes.py" in modules
    assert not any(path.startswith(("tests/", "bench/")) for path in modules)
