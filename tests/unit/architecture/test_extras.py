"""`pip install kafka-pulse` without extras: every module outside the dev stack's certificate code imports without
the `dev` and `test` extras' packages, and `kafka-pulse dev` says which extra it needs instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BLOCK_EXTRAS = """
import importlib.abc, sys
class _NoExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"cryptography", "fuse", "pytest", "selenium", "importlinter"}:
            raise ModuleNotFoundError(f"No module named {name!r} (extras not installed)", name=name)
        return None
sys.meta_path.insert(0, _NoExtras())
"""


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_EXTRAS + code], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )


def test_every_product_module_imports_without_the_extras() -> None:
    modules = [
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for package in ("pulse", "collectors", "canary", "lag", "slo", "dashboards", "audit", "kafka_pulse", "devstack")
        for path in sorted((REPO / package).rglob("*.py"))
    ]
    modules.remove("devstack.tls")  # the certificate code is the `dev` extra's reason to exist
    done = run_without_extras(f"import importlib\nfor m in {modules!r}: importlib.import_module(m)\nprint('ok')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_dev_names_the_extra_it_needs() -> None:
    done = run_without_extras(
        "from kafka_pulse.cli.main import main; sys.argv = ['kafka-pulse', 'dev', 'status']; main()"
    )
    assert done.returncode == 1
    assert "DependencyMissing: kafka-pulse dev needs the dev extra: pip install 'kafka-pulse[dev]'" in done.stderr
    assert "Traceback" not in done.stderr
