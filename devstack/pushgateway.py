"""A real Pushgateway (Debian `prometheus-pushgateway`) on loopback: where batch jobs such as the SLO burn-rate
run push their results for Prometheus to scrape (with `honor_labels`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from devstack.services import LocalService, QueryFailed, http_ok
from pulse.process import require_program

PACKAGE = "prometheus-pushgateway"


def grouping_path(job: str, grouping: Mapping[str, str] | None = None) -> str:
    """`/metrics/job/<job>/<label>/<value>...`; a value that is empty or holds '/' uses the Pushgateway's
    `<label>@base64/<value>` form, since a '/' (even percent-encoded) would split the path."""
    parts = ["metrics"]
    for label, value in {"job": job, **(grouping or {})}.items():
        if value == "" or "/" in value:
            parts += [f"{label}@base64", base64.urlsafe_b64encode(value.encode()).decode() or "="]
        else:
            parts += [label, quote(value, safe="")]
    return "/" + "/".join(parts)


class Pushgateway(LocalService):
    """Pushgateway with its persistence file in its own directory (never Debian's /var/lib default)."""

    name = "pushgateway"
    ready_timeout_s = 30.0

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        super().__init__(workdir, port)

    def argv(self) -> list[str]:
        return [
            require_program("prometheus-pushgateway", PACKAGE),
            f"--web.listen-address={self.address}",
            f"--persistence.file={self.workdir / 'pushgateway.data'}",
        ]

    def is_ready(self) -> bool:
        return http_ok(self.http, "/-/ready")

    def push(self, job: str, exposition: str, grouping: Mapping[str, str] | None = None) -> None:
        """Replace the group's metrics with `exposition` (text format); PUT semantics, like client_python's
        `push_to_gateway`."""
        body = exposition if exposition.endswith("\n") else exposition + "\n"
        response = self.call("PUT", grouping_path(job, grouping), content=body.encode())
        if response.status_code not in (200, 202):
            raise QueryFailed(f"pushgateway push {job!r}: HTTP {response.status_code}: {response.text.strip()}")

    def delete(self, job: str, grouping: Mapping[str, str] | None = None) -> None:
        """Remove a group, so a test leaves no stale series behind in a shared Pushgateway."""
        response = self.call("DELETE", grouping_path(job, grouping))
        if response.status_code not in (200, 202):
            raise QueryFailed(f"pushgateway delete {job!r}: HTTP {response.status_code}: {response.text.strip()}")
