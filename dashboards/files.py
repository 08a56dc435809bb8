"""What `kafka-pulse dashboards build` writes for Grafana: one JSON file per dashboard under json/ and the
provisioning files, as text keyed by relative path, so a test can compare them with the checked-in copies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from dashboards.canary import canary
from dashboards.cluster import overview
from dashboards.grafana import Json
from dashboards.lag import lag
from dashboards.lint import DashboardInvalid, problems
from dashboards.provisioning import (
    DEFAULT_DASHBOARDS_PATH,
    DEFAULT_PROMETHEUS_URL,
    DEFAULT_SCRAPE_INTERVAL_S,
    dashboards_yaml,
    datasources_yaml,
)
from dashboards.slo import slo
from dashboards.tiered import tiered

BUILDERS: dict[str, Callable[[], Json]] = {
    "kafka-pulse-cluster.json": overview,
    "kafka-pulse-canary.json": canary,
    "kafka-pulse-lag.json": lag,
    "kafka-pulse-slo.json": slo,
    "kafka-pulse-tiered.json": tiered,
}
"""File name under json/ -> the function building that dashboard."""


def all_dashboards() -> dict[str, Json]:
    """File name -> dashboard, checked: DashboardInvalid lists every structural problem."""
    built = {name: build() for name, build in BUILDERS.items()}
    found = problems(list(built.values()))
    if found:
        raise DashboardInvalid("generated dashboards fail their checks:\n" + "\n".join(found))
    return built


def render(dashboard: Json) -> str:
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


def grafana_files(
    prometheus_url: str = DEFAULT_PROMETHEUS_URL,
    dashboards_path: str = DEFAULT_DASHBOARDS_PATH,
    scrape_interval_s: int = DEFAULT_SCRAPE_INTERVAL_S,
) -> dict[str, str]:
    """Relative path -> text: json/<dashboard>.json and provisioning/{dashboards,datasources}.yaml."""
    files = {f"json/{name}": render(dashboard) for name, dashboard in all_dashboards().items()}
    files["provisioning/dashboards.yaml"] = dashboards_yaml(dashboards_path)
    files["provisioning/datasources.yaml"] = datasources_yaml(prometheus_url, scrape_interval_s)
    return files


def write_files(directory: Path, files: Mapping[str, str]) -> list[Path]:
    """Each file whole through a hidden temporary name, so Grafana polling the directory never reads half a file."""
    written = []
    for relative, text in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
        written.append(path)
    return written
