#!/usr/bin/env bash
# The README's test command: set up a fresh machine, run scripts/check.sh (import layers, lint, format, types), then
# run every test against real Kafka, Prometheus, Alertmanager, Pushgateway, ZooKeeper and Burrow on 127.0.0.1.
# With no arguments each test runs once: the unit suite first, on every core, with its coverage floor ([tool.coverage.report] in
# pyproject.toml, docs/testing.md), then the integration suite. With arguments, exactly `pytest ARGS`, no floor.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/check.sh
if [ "$#" -gt 0 ]; then
    echo "test: pytest $*"
    exec python3 -m pytest "$@"
fi
echo "test: pytest -m 'not integration' -n auto with the coverage floor"
unit=0
python3 -m pytest -m "not integration" -n auto --cov --cov-report=term || unit=$?
echo "test: pytest -m integration"
integration=0
python3 -m pytest -m integration || integration=$?
if [ "$unit" -ne 0 ]; then
    exit "$unit"
fi
exit "$integration"
