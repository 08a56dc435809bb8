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
# Tests that spend minutes waiting on the clock (whole SLO minutes, outages of a cluster of their own), using little
# CPU, and enough of the longest others to keep both processes inside the CI's budget, run in a second process beside the rest (docs/testing.md, "Beside the rest"). SIGINT is restored for it,
# since a background job of a non-interactive shell starts with SIGINT ignored and pytest would then skip its
# teardown on Ctrl-C.
beside=(
    tests/integration/slo/test_slo_end_to_end.py
    tests/integration/slo/test_slo_stream_outage.py
    tests/integration/lag/test_lag_outage.py
    tests/integration/pulse/test_sli_sink.py
    tests/integration/collectors/test_tiered_storage.py
    tests/integration/audit/test_audit_truncation.py
    tests/integration/audit/test_audit_faults.py
    tests/integration/audit/test_audit_reconcile.py
    tests/integration/slo/test_slo_stream_standalone.py
)
beside_log=$(mktemp)
echo "test: pytest -m integration, with ${beside[*]} in a second process beside the rest"
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    python3 -m pytest -m integration -p no:cacheprovider "${beside[@]}" >"$beside_log" 2>&1 &
beside_pid=$!
integration=0
python3 -m pytest -m integration "${beside[@]/#/--ignore=}" || integration=$?
beside_code=0
wait "$beside_pid" || beside_code=$?
echo "test: ${beside[*]} (beside the rest):"
cat "$beside_log"
rm -f "$beside_log"
for code in "$unit" "$integration" "$beside_code"; do
    if [ "$code" -ne 0 ]; then
        exit "$code"
    fi
done
exit 0
