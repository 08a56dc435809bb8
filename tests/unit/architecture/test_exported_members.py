"""`__all__` is each component's door: every name it lists exists, the application imports exactly those names and
only through the package root, and importing a root loads none of its modules (they are resolved on first use)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
APPLICATION = REPO / "kafka_pulse"
COMPONENTS = ("collectors", "canary", "lag", "slo", "dashboards", "audit", "devstack")
PENDING: set[str] = set()
"""Components whose application imports are still being moved to the package root (the lag stage split); the
lead removes an entry when its component merges."""
GUARDED = tuple(c for c in COMPONENTS if c not in PENDING)
LIBRARIES = ("audit",)
"""Components whose `__all__` also serves applications outside kafka-pulse (the audit's client library), so it
may name what our application never imports."""


def component_imports() -> Iterator[tuple[str, int, str, str | None]]:
    """(file, line, imported module, name or None for `import x.y`) for every import of a component by the
    application, in function bodies and TYPE_CHECKING blocks too."""
    for path in sorted(APPLICATION.rglob("*.py")):
        where = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(path.read_text(), filename=where)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                if node.module.split(".")[0] in COMPONENTS:
                    yield from ((where, node.lineno, node.module, alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in COMPONENTS:
                        yield where, node.lineno, alias.name, None


def exported(component: str) -> list[str]:
    names: list[str] = importlib.import_module(component).__all__
    return names


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_name_in_all_exists(component: str) -> None:
    module = importlib.import_module(component)
    missing = [name for name in exported(component) if not hasattr(module, name)]
    assert missing == [], f"{component}.__all__ names what {component} does not define: {missing}"


@pytest.mark.parametrize("component", GUARDED)
def test_the_application_imports_only_names_in_all(component: str) -> None:
    names = set(exported(component))
    outside = [
        f"{where}:{line}: from {module} import {name}"
        for where, line, module, name in component_imports()
        if module == component and name not in names
    ]
    assert outside == [], f"add to {component}/__init__.py's __all__, or do not import:\n" + "\n".join(outside)


@pytest.mark.parametrize("component", [c for c in GUARDED if c not in LIBRARIES])
def test_all_lists_exactly_what_the_application_uses(component: str) -> None:
    used = {name for _, _, module, name in component_imports() if module == component}
    unused = sorted(set(exported(component)) - used)
    assert unused == [], f"{component}.__all__ names what the application never imports: {unused}"


def test_the_application_imports_no_component_submodule() -> None:
    offenders = [
        f"{where}:{line}: " + (f"from {module} import {name}" if name is not None else f"import {module}")
        for where, line, module, name in component_imports()
        if module.split(".")[0] not in PENDING and (module != module.split(".")[0] or name is None)
    ]
    assert offenders == [], "import these through the component's package root:\n" + "\n".join(offenders)


def test_importing_a_component_root_loads_none_of_its_modules() -> None:
    """A root import must stay free: `kafka-pulse check` imports canary and collectors for two names each, and
    must not pay for Spark, the JMX transports or the canary's service."""
    code = (
        f"import sys; import {', '.join(GUARDED)}; "
        f"print(sorted(m for m in sys.modules if m.partition('.')[0] in {GUARDED!r} and '.' in m))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
