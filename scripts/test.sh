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
# Each process's output is also kept in a file, so that the end of the output says why a process failed (its
# short test summary, or the native crash Python's faulthandler printed): CI shows only the output's tail.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed_lines() {
    # The lines that say why the pytest process whose output is in $1 failed.
    local frames='site-packages/(_pytest|pluggy)/|<frozen runpy>'
    if grep -q "Fatal Python error" "$1"; then
        # The crashing thread's stack first (faulthandler prints it after the others), then the other threads'.
        grep -m 1 -o "Fatal Python error.*" "$1"
        sed -n '/^Current thread/,/^$/p' "$1" | grep -Ev "$frames" | head -40
        echo "other threads:"
        sed -n '/Fatal Python error/,/^Current thread/p' "$1" | grep -Ev "$frames|^Current thread" | head -60
    elif grep -q "short test summary info" "$1"; then
        sed -n '/short test summary info/,$p' "$1" | head -40
        # The summary cuts each failure's message to the terminal's width; the assertions themselves:
        grep -E "^E  |^[^ ]+\.py:[0-9]+: [A-Za-z]*(Error|Exception)" "$1" | cut -c1-300 | head -30
    else
        tail -n 30 "$1"
    fi
}
native_stack() {
    # The crashing thread's native stack from a core file left in the working directory (the kernel's pattern here
    # is `core`), when gdb is there to read it; the core is removed after.
    [ -f core ] || return 0
    if command -v gdb >/dev/null; then
        echo "test: the native stack of the crash (gdb, core file):"
        gdb -batch -nx -ex "bt 16" "$(python3 -c 'import sys; print(sys.executable)')" core 2>&1 \
            | grep -E "^(#|Core was generated|Program terminated)" | cut -c1-220 | head -20
    fi
    rm -f core
}
keep() {
    # tee into $1, ignoring SIGINT: on Ctrl-C pytest still prints its teardown, so the pipe must stay open.
    (trap '' INT && exec tee "$1")
}
echo "test: pytest -m 'not integration' -n auto with the coverage floor"
unit=0
python3 -m pytest -m "not integration" -n auto --cov --cov-report=term 2>&1 | keep "$logs/unit" || unit=${PIPESTATUS[0]}
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
    tests/integration/slo/test_slo_scenarios.py
    tests/integration/slo/test_slo_cli.py
    tests/integration/slo/test_slo_stream.py
    tests/integration/collectors/test_kraft_voter_change.py
    tests/integration/collectors/test_kraft_quorum.py
    tests/integration/lag/test_lag_new_protocol.py
    tests/integration/app/test_demo.py
    tests/integration/app/test_clean_exits.py
)
# A native crash in the integration processes (or a program they start) leaves a core file: native_stack prints its
# stack at the end.
ulimit -c unlimited 2>/dev/null || true
echo "test: pytest -m integration, with ${beside[*]} in a second process beside the rest"
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    python3 -m pytest -m integration -p no:cacheprovider "${beside[@]}" >"$logs/beside" 2>&1 &
beside_pid=$!
integration=0
python3 -m pytest -m integration "${beside[@]/#/--ignore=}" 2>&1 | keep "$logs/integration" || integration=${PIPESTATUS[0]}
beside_code=0
wait "$beside_pid" || beside_code=$?
echo "test: ${beside[*]} (beside the rest):"
cat "$logs/beside"
status=0
for name in unit integration beside; do
    code=$unit
    [ "$name" = integration ] && code=$integration
    [ "$name" = beside ] && code=$beside_code
    if [ "$code" -ne 0 ]; then
        echo "test: the $name process failed (exit $code); why:"
        # `|| true`: `head` closing its pipe early makes the pipeline exit 141 (SIGPIPE) under pipefail, and `set -e`
        # would then end the script there, with that code instead of the tests' and the other processes' reasons.
        failed_lines "$logs/$name" || true
        [ "$status" -ne 0 ] || status=$code
    fi
done
native_stack || true
exit "$status"
