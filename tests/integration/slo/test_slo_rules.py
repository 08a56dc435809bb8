"""`kafka-pulse slo rules` with the real promtool (Debian `prometheus`): the generated rules pass
`promtool check rules` and their generated `promtool test rules` for SLOs of every shape (30d, 28d, 7d with a
fixed factor, timeslices, a calendar month, labels and the low-traffic guard), the example files pass as checked
in, a rule that would fire at exactly the budget fails its tests, and bad PromQL is refused by promtool.

promtool missing fails these tests (devstack.services.require_program), it never skips them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kafka_pulse.cli.main import cli
from pulse.errors import DependencyMissing
from slo.rules_files import PromtoolFailed, check_files
from slo.spec import parse_slos
from tests.support.promtool import promtool

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]

PROMETHEUS = {"type": "prometheus", "url": "http://127.0.0.1:9090"}
GOOD = "sum(increase(pulse_test_good_total[1m]))"
TOTAL = "sum(increase(pulse_test_events_total[1m]))"

SHAPES: list[dict[str, Any]] = [
    {
        "name": "default-30d",
        "description": "Produce requests {{acknowledged}}",  # template braces in text stay text
        "labels": {"cluster": "prod", "team": "payments"},
        "objective": 99.9,
        "window": "30d",
        "alerting": {"min_events": 100},
    },
    {"name": "rolling-28d", "objective": 99.95, "window": "28d"},
    {
        "name": "weekly-fixed-factor",
        "objective": 99,
        "window": "7d",
        "alerting": {"page": {"windows": [{"long": "1h", "short": "5m", "factor": 10}]}, "ticket": {"disabled": True}},
    },
    {
        "name": "lag-minutes",
        "objective": 99,
        "window": "7d",
        "budgeting": {"method": "timeslices", "slice_target": 95},
    },
    {"name": "calendar-month", "objective": 99.5, "window": {"calendar": "1M", "timezone": "Europe/Berlin"}},
]


def write_config(path: Path, slos: list[dict[str, Any]]) -> Path:
    config = {
        "alerting": {"labels": {"team": "kafka"}, "runbook_url": "https://runbooks.example.com/{alertname}#{slo}"},
        "slos": [{"source": PROMETHEUS, "good": GOOD, "total": TOTAL} | slo for slo in slos],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_rules_of_every_shape_pass_promtool_check_and_their_generated_tests(tmp_path: Path) -> None:
    events = {"name": "canary-log", "source": {"type": "events", "path": "nowhere"}, "good": "ok", "total": "true"}
    config = write_config(tmp_path / "pulse.yaml", SHAPES)
    entries = yaml.safe_load(config.read_text())
    entries["slos"].append(events | {"objective": 99.9})
    config.write_text(yaml.safe_dump(entries, sort_keys=False))
    out = tmp_path / "rules"

    result = CliRunner().invoke(cli, ["slo", "rules", "--config", str(config), "--out", str(out)])

    assert result.exit_code == 0, result.output
    names = [s["name"] for s in SHAPES]
    expected = [str(out / f"slo-{n}.{kind}.yml") for n in names for kind in ("rules", "test")]
    assert result.stdout.split() == expected
    assert "no rules for 'canary-log': its SLI is an event log" in result.stderr
    checked = promtool("check", "rules", *(f"slo-{n}.rules.yml" for n in names), cwd=out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("SUCCESS") == len(names)
    tested = promtool("test", "rules", *(f"slo-{n}.test.yml" for n in names), cwd=out)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.count("SUCCESS") == len(names)
    assert "FAILED" not in tested.stdout


def test_the_example_rules_pass_promtool_as_checked_in() -> None:
    directory = REPO / "examples" / "prometheus-rules"
    slos = parse_slos(
        [("examples", yaml.safe_load((REPO / "examples" / "prometheus-slo.yaml").read_text())["slos"])],
        None,
        check_sources=False,
    )
    check_files(directory, slos)


def test_a_rule_firing_at_exactly_the_budget_fails_its_generated_tests(tmp_path: Path) -> None:
    """The generated tests have teeth: `>=` instead of the job's strict `>` on the 1x ticket pair fires during
    the steady burn at exactly the budget, and promtool says which case and minute."""
    config = write_config(tmp_path / "pulse.yaml", [SHAPES[0]])
    out = tmp_path / "rules"
    assert CliRunner().invoke(cli, ["slo", "rules", "--config", str(config), "--out", str(out)]).exit_code == 0
    rules = out / "slo-default-30d.rules.yml"
    text = rules.read_text()
    assert text.count(" > 0.001\n") == 4  # the 3d/6h pair, in the rule and in its summary
    rules.write_text(text.replace(" > 0.001\n", " >= 0.001\n"))
    slos = parse_slos([("pulse.yaml", yaml.safe_load(config.read_text())["slos"])], None, check_sources=False)

    with pytest.raises(PromtoolFailed) as caught:
        check_files(out, slos)

    assert "name: budget-burn" in str(caught.value)
    assert "FAILED" in str(caught.value)


def test_promql_promtool_refuses_is_reported_with_promtools_words(tmp_path: Path) -> None:
    config = write_config(tmp_path / "pulse.yaml", [{"name": "broken", "objective": 99.9, "window": "30d"}])
    entries = yaml.safe_load(config.read_text())
    entries["slos"][0]["good"] = "sum(rate(pulse_test_good_total[1m])"
    config.write_text(yaml.safe_dump(entries))

    result = CliRunner().invoke(cli, ["slo", "rules", "--config", str(config), "--check"])

    assert result.exit_code == 1
    assert result.stderr.startswith("PromtoolFailed: `promtool check rules slo-broken.rules.yml` failed")
    assert "unclosed left parenthesis" in result.stderr


def test_without_promtool_the_check_fails_naming_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "pulse.yaml", [SHAPES[1]])
    slos = parse_slos([("pulse.yaml", yaml.safe_load(config.read_text())["slos"])], None, check_sources=False)
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(DependencyMissing, match="install the Debian package 'prometheus'"):
        check_files(tmp_path, slos)


def test_files_of_a_removed_slo_are_named_on_stderr(tmp_path: Path) -> None:
    """A renamed SLO leaves its old files in --out, and a Prometheus loading `*.rules.yml` there would still run
    them: the command names them (it does not delete files it was not asked to)."""
    out = tmp_path / "rules"
    before = write_config(tmp_path / "before.yaml", [SHAPES[1]])
    assert CliRunner().invoke(cli, ["slo", "rules", "--config", str(before), "--out", str(out)]).exit_code == 0
    after = write_config(tmp_path / "after.yaml", [SHAPES[1] | {"name": "renamed-28d"}])

    result = CliRunner().invoke(cli, ["slo", "rules", "--config", str(after), "--out", str(out)])

    assert result.exit_code == 0, result.output
    notices = [line for line in result.stderr.splitlines() if "is not generated any more" in line]
    assert [line.split()[2] for line in notices] == [
        str(out / "slo-rolling-28d.rules.yml"),
        str(out / "slo-rolling-28d.test.yml"),
    ]
    assert (out / "slo-rolling-28d.rules.yml").exists()
