#!/usr/bin/env bash
# Installs what a fresh machine lacks: Debian packages, the Python package with its dev extra, Kafka jars.
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(openjdk-17-jre-headless maven prometheus prometheus-alertmanager prometheus-pushgateway zookeeperd burrow)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # The packages' own services must not start on 0.0.0.0: kafka-pulse starts its own on loopback.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Packaged daemons (zookeeper, prometheus...) may have been started by postinst on a systemd host; we use our own.
for svc in zookeeper prometheus prometheus-alertmanager prometheus-pushgateway burrow; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done

PYTHON=${PYTHON:-python3}
echo "setup: installing kafka-pulse and its dev extra"
"$PYTHON" -m pip install -q --disable-pip-version-check -e '.[dev]'

echo "setup: gathering Kafka jars from Maven Central (cached after the first run)"
kafka-pulse dev fetch
