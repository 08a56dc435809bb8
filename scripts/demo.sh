#!/usr/bin/env bash
# The README's run command: set the machine up, start a local 3-broker KRaft cluster, run kafka-pulse on it,
# and tear everything down on exit (Ctrl-C, SIGTERM, or the suite stopping).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

cleanup() {
  trap - EXIT INT TERM
  echo "demo: stopping the dev cluster"
  kafka-pulse dev down || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kafka-pulse dev up --brokers "${BROKERS:-3}"
echo "demo: cluster state: kafka-pulse dev status --json"

set +e
kafka-pulse run "$@"
code=$?
set -e
if [ "$code" -eq 2 ]; then
  # `run` has not landed yet (issue #7): keep the cluster up for exploring until interrupted.
  echo "demo: the dev cluster stays up until Ctrl-C; try: kafka-pulse dev status, kafka-pulse dev kill 3"
  sleep infinity &
  wait $!  # `wait` returns at once on a trapped signal, unlike a foreground sleep
fi
exit "$code"
