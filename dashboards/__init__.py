"""Grafana dashboards built in code, with Prometheus rules and an Alertmanager example beside them.

`kafka-pulse dashboards build` writes json/, provisioning/, prometheus/ and alertmanager/ here (docs/dashboards.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulse.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from dashboards.files import grafana_files, write_files

__all__ = [
    "grafana_files",
    "write_files",
]

_HOMES = {
    "grafana_files": "dashboards.files",
    "write_files": "dashboards.files",
}
"""Exported name -> the module that defines it, imported on first use (PEP 562), so importing the package is free."""

if not TYPE_CHECKING:  # mypy reads the imports above, so a name missing from them is an error, not an `object`
    __getattr__ = lazy_exports(__name__, _HOMES)
