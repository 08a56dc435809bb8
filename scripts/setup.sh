#!/usr/bin/env bash
# Installs what a fresh machine lacks: Debian packages, the Python package with its dev and test extras, Kafka jars.
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(openjdk-17-jre-headless maven prometheus prometheus-alertmanager prometheus-pushgateway zookeeperd burrow chromium chromium-driver fuse3 libfuse2)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # On a systemd host the packages' postinst scripts may start their services (prometheus on :9090, zookeeper on
  # :2181...) as for any install; setup neither prevents that (no policy-rc.d) nor undoes it.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Host services are left alone: setup never stops, masks or reconfigures one (a host's own Prometheus or ZooKeeper
# keeps running). The tests and the demo start the binaries themselves on free loopback ports with their own data
# directories, so they never need the packaged units or their ports.

PYTHON=${PYTHON:-python3}
# Skipped when this checkout is already installed (editable) and every requirement of pyproject.toml, the dev and test
# extras included, is satisfied: running setup again (demo.sh does, every time) must not reinstall the package under
# processes that are using it.
installed() {
  command -v kafka-pulse >/dev/null && "$PYTHON" - <<'PY'
import importlib.metadata as md, json, pathlib, sys, tomllib
from packaging.requirements import Requirement
root = pathlib.Path.cwd().resolve()
site = [p for p in sys.path if p and pathlib.Path(p).resolve() != root]  # not the checkout's own egg-info
dist = next(iter(md.Distribution.discover(name="kafka-pulse", path=site)), None)
url = json.loads((dist.read_text("direct_url.json") if dist else None) or "{}")
if url.get("url") != root.as_uri() or not url.get("dir_info", {}).get("editable"):
    sys.exit(1)
project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
extras = project["optional-dependencies"]
for text in project["dependencies"] + extras["dev"] + extras["test"]:
    wanted = Requirement(text)
    if wanted.name == "kafka-pulse":  # the test extra names the dev extra
        continue
    try:
        if not wanted.specifier.contains(md.version(wanted.name), prereleases=True):
            sys.exit(1)
    except md.PackageNotFoundError:
        sys.exit(1)
PY
}
if installed 2>/dev/null; then
  echo "setup: kafka-pulse is installed from this checkout with all its requirements"
else
  echo "setup: installing kafka-pulse and its dev and test extras"
  "$PYTHON" -m pip install -q --disable-pip-version-check -e '.[test]'
fi

echo "setup: gathering Kafka jars from Maven Central (cached after the first run)"
kafka-pulse dev fetch
