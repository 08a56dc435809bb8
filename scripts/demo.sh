#!/usr/bin/env bash
# The README's run command: set the machine up, start a local 3-broker KRaft cluster, run kafka-pulse on it with
# Prometheus and Alertmanager beside it (when installed), print where to look, and tear everything down on exit
# (Ctrl-C or SIGTERM). State lives under $KAFKA_PULSE_HOME (default ~/.local/state/kafka-pulse).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

PYTHON=${PYTHON:-python3}
cluster_started=0
supervisor=""

# Teardown must not depend on where the output goes: with `demo.sh | tee log` stopped by Ctrl-C, tee is gone before
# this runs, and an echo into its closed pipe would kill bash (SIGPIPE) or, under `set -e`, end the trap early.
say() { echo "$@" 2>/dev/null || true; }

cleanup() {
  trap - EXIT INT TERM
  trap '' PIPE
  set +e
  if [ -n "$supervisor" ] && kill -0 "$supervisor" 2>/dev/null; then
    kill -TERM "$supervisor" 2>/dev/null || true
    wait "$supervisor" 2>/dev/null || true  # it stops run, Prometheus and Alertmanager
  fi
  if [ "$cluster_started" = 1 ]; then
    say "demo: stopping the dev cluster"
    kafka-pulse dev down || true
  fi
  say "demo: stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A dev cluster that is already running belongs to someone else: leave it alone rather than tear it down on exit.
home=$("$PYTHON" -c 'from kafka_pulse.cli.dev import dev_home; print(dev_home())')
if [ -f "$home/state.json" ] && kafka-pulse dev status >/dev/null 2>&1; then
  echo "demo: a dev cluster is already running at $home; stop it (kafka-pulse dev down) or set KAFKA_PULSE_HOME" >&2
  exit 1
fi
cluster_started=1  # before `dev up`, so an interrupted start is cleaned up too
kafka-pulse dev up --brokers "${BROKERS:-3}"

# In the background and awaited: `wait` returns at once on a trapped signal, a foreground child would delay it.
"$PYTHON" -m kafka_pulse.runner.demo &
supervisor=$!
set +e
wait "$supervisor"
code=$?
set -e
supervisor=""
exit "$code"
