"""Test-run wiring: fixtures live in tests/fixtures/, one module per kind of real process."""

pytest_plugins = [
    "tests.fixtures.logs",
    "tests.fixtures.kafka",
    "tests.fixtures.services",
    "tests.fixtures.mirror",
    "tests.fixtures.spark",
]
