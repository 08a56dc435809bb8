"""`kafka-pulse check` answers within seconds of its process's start, and imports are most of a healthy check's
time: the command, run as a process of its own, must not load the libraries only other commands need (the
figures: docs/benchmarks.md, "Health check"). No Kafka: the configured cluster's port is closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pulse.ports import LOOPBACK, free_ports

REPO = Path(__file__).resolve().parents[3]
HEAVY = (
    "httpx",  # with httpcore and trio, a third of the check's imports: the run's /metrics is read only when one listens
    "httpcore",
    "trio",
    "rich",  # the table only; `--json` never needs it
    "prometheus_client",  # the run's /metrics text is parsed only when there is one
    "numpy",
    "pyarrow",
    "pandas",
    "pyspark",
    "jpype",
    "lag",  # the other commands' components
    "slo",
    "dashboards",
    "kafka_pulse.runner",
    "kafka_pulse.status",
    "devstack.cluster",  # the dev cluster, when the config names none
    "kafka",  # kafka-python (0.1 s of CPU): the quorum is read on a connection of our own unless a SASL login is needed
)
RUN_CHECK = """
import json, os, sys
exit_now = os._exit
def report_modules(code):
    loader = sys.modules.get("pydantic.plugin._loader")
    print(json.dumps(loader is not None and loader._plugins is not None), file=sys.stderr)
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
    exit_now(code)
os._exit = report_modules  # check leaves with os._exit: nothing else runs after it
sys.argv = ["kafka-pulse", "check", "--json", "--config", sys.argv[1], "--timeout", "8"]
from kafka_pulse.cli.main import main
main()
"""


def test_check_loads_none_of_the_heavy_modules(tmp_path: Path) -> None:
    kafka_port, http_port = free_ports(2)
    config = tmp_path / "pulse.yaml"
    config.write_text(
        f'clusters:\n  - name: closed\n    bootstrap_servers: ["{LOOPBACK}:{kafka_port}"]\n'
        f'http:\n  listen: "{LOOPBACK}:{http_port}"\n'
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", RUN_CHECK, str(config)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    report = json.loads(done.stdout)
    # it ran past the config into the probes (nothing answers on the cluster's port; the timeout is for a loaded host)
    assert [c["name"] for c in report["checks"]][:1] == ["brokers"], done.stdout
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], loaded
    assert "kafka_pulse.check.health_check" in modules  # the whole check was imported, not a short cut
    # pydantic's plugin search (every installed distribution's entry points read, ~25 ms) is off
    assert json.loads(done.stderr.strip().splitlines()[-2]) is False
    assert "argparse" not in modules  # only `python -m devstack.slow_disk` parses arguments with it
