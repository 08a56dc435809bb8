"""`lag/__init__.py`'s `__all__` is the door of the lag component: the application imports lag only from the package
root, every name it lists resolves, and every stage package says in one line where it sits in the pipeline."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lag

REPO = Path(__file__).resolve().parents[3]
STAGES = ("ingest", "store", "evaluate", "evaluate/columnar", "diagnose", "serve", "notify")


def lag_imports(tree: ast.AST) -> list[str]:
    """The lag modules a module imports (`import lag.x`, `from lag.x import y`), at any depth of the module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.module.split(".")[0] == "lag":
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "lag"]
    return out


def test_the_application_imports_lag_through_its_package_root() -> None:
    deep = {
        f"{path.relative_to(REPO)}: {module}"
        for path in sorted((REPO / "kafka_pulse").rglob("*.py"))
        for module in lag_imports(ast.parse(path.read_text()))
        if module != "lag"
    }
    assert not deep, sorted(deep)


def test_the_door_finds_the_submodule_import_it_forbids() -> None:
    assert lag_imports(ast.parse("def f():\n    from lag.serve.routes import invalid_request\n")) == [
        "lag.serve.routes"
    ]


@pytest.mark.parametrize("name", lag.__all__)
def test_every_name_of_the_door_resolves(name: str) -> None:
    assert getattr(lag, name) is not None


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_package_places_itself_in_one_line(stage: str) -> None:
    docstring = ast.get_docstring(ast.parse((REPO / "lag" / stage / "__init__.py").read_text()))
    assert docstring is not None and "\n" not in docstring and len(docstring) <= 116
