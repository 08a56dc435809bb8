#!/usr/bin/env bash
# The README's test command: set up a fresh machine, run scripts/check.sh (import layers, lint, format, types), then
# run every test against real Kafka, Prometheus, Alertmanager, Pushgateway, ZooKeeper and Burrow on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/check.sh
echo "test: pytest"
exec python3 -m pytest "$@"
