"""The three layers of docs/architecture.md hold: `lint-imports` keeps the contracts in pyproject.toml, and each
contract breaks when an arrow points up or sideways, inside the application too, or when the application imports a
component's module past its package root (shown on a copy of the tree with one import added)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
PACKAGES = ("kafka_pulse", "devstack", "collectors", "canary", "lag", "slo", "dashboards", "audit", "pulse")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over the packages under `root`, with the contract of `root`'s pyproject.toml."""
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_tree_keeps_the_layers() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        pytest.param("canary/__init__.py", "lag", id="component-imports-component"),
        pytest.param("pulse/__init__.py", "slo", id="base-imports-component"),
        pytest.param("collectors/__init__.py", "kafka_pulse", id="component-imports-application"),
        pytest.param("devstack/__init__.py", "canary", id="dev-stack-imports-component"),
    ],
)
def test_an_arrow_pointing_up_or_sideways_breaks_the_contract(tmp_path: Path, module: str, imported: str) -> None:
    done = lint_imports_with(tmp_path, module, imported)

    assert done.returncode != 0
    assert "BROKEN" in done.stdout
    assert f"{module.split('/')[0]} -> {imported}" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("module", "imported", "broken"),
    [
        pytest.param(
            "kafka_pulse/runner/demo.py",
            "kafka_pulse.cli.dev",
            "kafka_pulse.runner.demo -> kafka_pulse.cli.dev",
            id="runner-imports-cli",
        ),
        pytest.param(
            "kafka_pulse/check/judge/verdict.py",
            "kafka_pulse.status.document",
            "kafka_pulse.check.judge.verdict -> kafka_pulse.status.document",
            id="check-imports-status",
        ),
        pytest.param(
            "kafka_pulse/check/probe/round_trip.py",
            "canary.topic",
            "kafka_pulse.check.probe.round_trip -> canary.topic",
            id="application-imports-component-module",
        ),
        pytest.param(
            "kafka_pulse/check/judge/verdict.py",
            "kafka_pulse.check.probe.kafka_probes",
            "kafka_pulse.check.judge.verdict -> kafka_pulse.check.probe.kafka_probes",
            id="check-judge-imports-probe",
        ),
        pytest.param(
            "kafka_pulse/check/probe/share_probe.py",
            "kafka_pulse.check.consult.run_metrics",
            "kafka_pulse.check.probe.share_probe -> kafka_pulse.check.consult.run_metrics",
            id="check-probe-imports-consult",
        ),
    ],
)
def test_the_application_contracts_break_on_a_bad_import(
    tmp_path: Path, module: str, imported: str, broken: str
) -> None:
    done = lint_imports_with(tmp_path, module, imported)

    assert done.returncode != 0
    assert "BROKEN" in done.stdout
    assert broken in done.stdout, done.stdout


def lint_imports_with(tmp_path: Path, module: str, imported: str) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over a copy of the tree in which `module` also imports `imported`."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\nimport {imported}  # noqa: E402\n")
    return lint_imports(tmp_path)


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        pytest.param("lag/evaluate/__init__.py", "lag.serve", id="evaluate-imports-serve"),
        pytest.param("lag/store/lock.py", "lag.evaluate", id="store-imports-evaluate"),
        pytest.param("lag/protocol.py", "lag.store", id="protocol-imports-store"),
        pytest.param("lag/diagnose/__init__.py", "lag.notify", id="diagnose-imports-notify"),
        pytest.param("lag/serve/__init__.py", "lag.notify", id="serve-imports-notify"),
        pytest.param("lag/evaluate/rules.py", "lag.ingest", id="evaluate-imports-ingest"),
        pytest.param("lag/ingest/records.py", "lag.evaluate", id="ingest-imports-evaluate"),
        pytest.param("lag/ingest/members.py", "lag.diagnose", id="ingest-imports-diagnose"),
        pytest.param("lag/serve/burrow_json.py", "lag.assembly", id="serve-imports-assembly"),
    ],
)
def test_a_lag_stage_reaching_up_breaks_the_inner_contract(tmp_path: Path, module: str, imported: str) -> None:
    """The stages inside `lag` (pyproject.toml's lag contracts): an arrow up the pipeline fails the build."""
    done = lint_imports_with(tmp_path, module, imported)

    stage = "lag." + module.split("/")[1].removesuffix(".py")
    importer = module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    assert done.returncode != 0
    assert f"{stage} is not allowed to import {imported}" in done.stdout, done.stdout
    assert f"{importer} -> {imported}" in done.stdout, done.stdout
