"""Test-run wiring: fixtures live in tests/fixtures/, one module per kind of real process; every test under
tests/integration/ carries the `integration` mark by its folder, so `-m "not integration"` starts no server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.logs",
    "tests.fixtures.kafka",
    "tests.fixtures.services",
    "tests.fixtures.mirror",
    "tests.fixtures.spark",
    "tests.fixtures.pulse_process",
]

INTEGRATION = Path(__file__).parent / "integration"
"""Every test below this folder starts real processes, whether or not its module says so."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(INTEGRATION):
            item.add_marker(pytest.mark.integration)
