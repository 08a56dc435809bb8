#!/usr/bin/env bash
# The README's test command: set up a fresh machine, lint, type-check, then run every test against real
# Kafka, Prometheus, Alertmanager, Pushgateway, ZooKeeper and Burrow on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "test: ruff"
ruff check .
ruff format --check .
echo "test: mypy"
mypy
echo "test: pytest"
exec python3 -m pytest "$@"
