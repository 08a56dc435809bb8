"""Grafana dashboards built in code, with Prometheus rules and an Alertmanager example beside them.

`kafka-pulse dashboards build` writes json/, provisioning/, prometheus/ and alertmanager/ here (docs/dashboards.md).
"""

from dashboards.files import all_dashboards, grafana_files, write_files
from dashboards.lint import DashboardInvalid, problems

__all__ = ["DashboardInvalid", "all_dashboards", "grafana_files", "problems", "write_files"]
