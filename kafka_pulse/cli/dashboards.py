"""`kafka-pulse dashboards build`: the Grafana dashboards and provisioning files (dashboards/), the Prometheus rules
of the config's Prometheus-source SLOs (slo/rules_files.py) and the Alertmanager example, in one directory tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import click

from kafka_pulse.cli.options import config_option
from kafka_pulse.clusters import load_or_default

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SLOS = Path("examples/prometheus-slo.yaml")
"""SLOs whose rules ship beside the dashboards when no config is given (relative to the repository)."""
EXAMPLE_ALERTMANAGER = Path("examples/alertmanager.yml")
DEFAULT_OUT = Path("dashboards")


@dataclass(frozen=True)
class Output:
    """What a build writes (relative path -> text) and what it could not, each with why."""

    files: dict[str, str]
    notes: list[str] = field(default_factory=list)


def build_output(
    config_path: Path | None,
    prometheus_url: str,
    dashboards_path: str,
    repo: Path = REPO,
) -> Output:
    """Every file of the tree: json/, provisioning/, prometheus/ (SLO rules and their promtool tests) and
    alertmanager/alertmanager.yml. Without a config, the SLO rules are those of the repository's example SLOs."""
    from dashboards import grafana_files
    from slo import NoPrometheusSli, RuleOptions, load_rule_slos, output_files, select

    notes: list[str] = []
    slo_config: Path | None
    if config_path is None and (repo / EXAMPLE_SLOS).is_file():
        slo_config, source, base_dir = repo / EXAMPLE_SLOS, str(EXAMPLE_SLOS), (repo / EXAMPLE_SLOS).parent
    else:
        slo_config, source = config_path, str(config_path) if config_path else "config"
        base_dir = config_path.parent if config_path is not None else Path.cwd()
    config = load_or_default(slo_config, os.environ)
    files = grafana_files(prometheus_url, dashboards_path, max(1, round(config.collectors.scrape_interval_s)))
    if config.slos or config.slo.spec is not None:
        try:
            selection = select(load_rule_slos(config, source, base_dir), source)
        except NoPrometheusSli as exc:
            notes.append(f"no SLO rules: {exc}")
        else:
            options = RuleOptions(config.alerting.labels, config.alerting.runbook_url)
            rules = output_files(selection.chosen, options, source)
            files |= {f"prometheus/{name}": text for name, text in rules.items()}
            notes += [f"no SLO rules for {name!r}: {why}" for name, why in selection.skipped]
    else:
        notes.append(f"no SLO rules: {source} has no SLOs (`slos:` or `slo.spec`)")
    alertmanager = repo / EXAMPLE_ALERTMANAGER
    if alertmanager.is_file():
        files["alertmanager/alertmanager.yml"] = alertmanager.read_text(encoding="utf-8")
    else:
        notes.append(f"no Alertmanager example: {alertmanager} is not there (it ships with the repository)")
    return Output(files, notes)


def stale_files(directory: Path, files: dict[str, str]) -> list[Path]:
    """Generated-looking files under `directory` this build did not write (a dashboard or SLO since renamed)."""
    patterns = ("json/*.json", "prometheus/slo-*.rules.yml", "prometheus/slo-*.test.yml")
    found = [path for pattern in patterns for path in directory.glob(pattern)]
    return sorted(path for path in found if path.relative_to(directory).as_posix() not in files)


@click.group()
def dashboards() -> None:
    """Grafana dashboards built in code."""


@dashboards.command()
@config_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Directory to write json/, provisioning/, prometheus/ and alertmanager/ into.",
)
@click.option(
    "--prometheus-url",
    default="http://127.0.0.1:9090",
    show_default=True,
    help="URL of the Prometheus datasource in provisioning/datasources.yaml.",
)
@click.option(
    "--dashboards-path",
    default="/var/lib/grafana/dashboards/kafka-pulse",
    show_default=True,
    help="Where Grafana reads the JSON files (provisioning/dashboards.yaml).",
)
def build(config_path: Path | None, out_dir: Path, prometheus_url: str, dashboards_path: str) -> None:
    """Generate the dashboard JSON, provisioning files, Prometheus rules and Alertmanager example.

    The SLO rules are those of the config's Prometheus-source SLOs (without --config, examples/prometheus-slo.yaml);
    prints the paths written.
    """
    from dashboards import write_files

    output = build_output(config_path, prometheus_url, dashboards_path)
    for note in output.notes:
        click.echo(f"dashboards build: {note}", err=True)
    written = write_files(out_dir, output.files)
    for path in stale_files(out_dir, output.files):
        click.echo(f"dashboards build: {path} is not generated any more (renamed or removed?); delete it", err=True)
    for path in written:
        click.echo(str(path))
