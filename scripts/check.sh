#!/usr/bin/env bash
# The fast check: import layers, lint, format and types over the package, tests/ and bench/. Needs only the `test`
# extra (pip install -e '.[test]'): no apt, Maven or servers; a few seconds once mypy's cache is warm. test.sh runs
# it after setting up the machine, and .pre-commit-config.yaml runs the same four commands.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "check: lint-imports"
lint-imports
echo "check: ruff"
ruff check .
ruff format --check .
echo "check: mypy"
mypy
