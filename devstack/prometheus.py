"""A real Prometheus (Debian `prometheus`) on loopback: scrapes what collectors, canary and lag expose, evaluates
rules and sends alerts to Alertmanager; tests query it as Grafana and `kafka-pulse check` would.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from devstack.services import (
    LocalService,
    QueryFailed,
    decode_json,
    duration,
    http_ok,
    run_checker,
)
from pulse.errors import ConfigError
from pulse.polling import poll
from pulse.process import require_program

PACKAGE = "prometheus"


@dataclass(frozen=True)
class ScrapeTarget:
    """One scrape job: Prometheus's `job_name` and the host:port endpoints it scrapes."""

    job: str
    targets: tuple[str, ...]
    honor_labels: bool = False
    """Keep the scraped `job`/`instance` labels; needed for the Pushgateway."""
    metrics_path: str = "/metrics"
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels added to every series of this job, e.g. {"cluster": "local"}."""


def render_prometheus_config(
    targets: Sequence[ScrapeTarget],
    rule_files: Sequence[Path] = (),
    alertmanagers: Sequence[str] = (),
    scrape_interval_s: float = 1.0,
    evaluation_interval_s: float = 1.0,
) -> str:
    """prometheus.yml for the given jobs, rule files and Alertmanager host:ports; pure, so tests read it back."""
    jobs = [t.job for t in targets]
    duplicates = sorted({j for j in jobs if jobs.count(j) > 1})
    if duplicates:
        raise ConfigError(f"prometheus: scrape job names must be unique, repeated: {duplicates}")
    for i, target in enumerate(targets):
        for j, hostport in enumerate(target.targets):
            _check_hostport(hostport, f"prometheus: targets[{i}] ({target.job}).targets[{j}]")
    for i, am in enumerate(alertmanagers):
        _check_hostport(am, f"prometheus: alertmanagers[{i}]")
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": duration(scrape_interval_s),
            "scrape_timeout": duration(scrape_interval_s),
            "evaluation_interval": duration(evaluation_interval_s),
        },
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [_scrape_config(t) for t in targets],
    }
    if alertmanagers:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(alertmanagers)}]}]}
    return yaml.safe_dump(config, sort_keys=False)


def _scrape_config(target: ScrapeTarget) -> dict[str, Any]:
    static: dict[str, Any] = {"targets": list(target.targets)}
    if target.labels:
        static["labels"] = dict(target.labels)
    return {
        "job_name": target.job,
        "honor_labels": target.honor_labels,
        "metrics_path": target.metrics_path,
        "static_configs": [static],
    }


def _check_hostport(value: str, where: str) -> None:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"{where}: {value!r} is not host:port")


class Prometheus(LocalService):
    """Prometheus with `--web.enable-lifecycle` (so `reload()` works) and `--rules.alert.resend-delay=1s`
    (the 1 min default delays the first alert to a freshly discovered Alertmanager by a minute).
    """

    name = "prometheus"
    ready_timeout_s = 60.0

    def __init__(
        self,
        workdir: Path,
        targets: Sequence[ScrapeTarget] = (),
        rule_files: Sequence[Path] = (),
        alertmanagers: Sequence[str] = (),
        scrape_interval_s: float = 1.0,
        evaluation_interval_s: float = 1.0,
        port: int | None = None,
    ) -> None:
        super().__init__(workdir, port)
        self.targets = tuple(targets)
        self.rule_files = tuple(rule_files)
        self.alertmanagers = tuple(alertmanagers)
        self.scrape_interval_s = scrape_interval_s
        self.evaluation_interval_s = evaluation_interval_s

    @property
    def config_path(self) -> Path:
        return self.workdir / "prometheus.yml"

    def prepare(self) -> None:
        self._write_config()

    def argv(self) -> list[str]:
        return [
            require_program("prometheus", PACKAGE),
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address={self.address}",
            "--web.enable-lifecycle",
            "--rules.alert.resend-delay=1s",
        ]

    def is_ready(self) -> bool:
        return http_ok(self.http, "/-/ready")

    def _write_config(self) -> None:
        """Render, then have promtool check it (rule files included) before Prometheus ever reads it."""
        text = render_prometheus_config(
            self.targets, self.rule_files, self.alertmanagers, self.scrape_interval_s, self.evaluation_interval_s
        )
        candidate = self.workdir / "prometheus.yml.new"
        candidate.write_text(text)
        run_checker([require_program("promtool", PACKAGE), "check", "config", str(candidate)], "prometheus.yml")
        candidate.replace(self.config_path)

    # --- API -------------------------------------------------------------------------------------------------
    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """The result vector of an instant query (values are strings); raises QueryFailed unless
        status == success. An empty list means no data, which is still a success."""
        params = {"query": expr} if at is None else {"query": expr, "time": str(at)}
        response = self.call("GET", "/api/v1/query", params=params)
        body = decode_json(response, f"prometheus query {expr!r}")
        if not isinstance(body, dict) or body.get("status") != "success":
            raise QueryFailed(f"prometheus query {expr!r}: HTTP {response.status_code}: {body!r}"[:2000])
        return cast(list[dict[str, Any]], body["data"]["result"])

    def wait_for_query(self, expr: str, timeout_s: float = 30.0, min_results: int = 1) -> list[dict[str, Any]]:
        """Poll `query(expr)` until it returns at least `min_results` series."""
        return poll(lambda: self.query(expr), lambda r: len(r) >= min_results, timeout_s, f"prometheus: {expr!r}")

    def targets_state(self) -> list[dict[str, Any]]:
        """The active targets as `/api/v1/targets` reports them (scrapePool, health, lastError, ...)."""
        body = decode_json(self.call("GET", "/api/v1/targets", params={"state": "active"}), "prometheus targets")
        return cast(list[dict[str, Any]], body["data"]["activeTargets"])

    def wait_for_target_up(self, job: str, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """Wait until every target of `job` is up. Targets only appear after service discovery's ~5 s update
        tick, hence polling with a generous timeout."""

        def of_job() -> list[dict[str, Any]]:
            return [t for t in self.targets_state() if t.get("scrapePool") == job]

        def all_up(found: list[dict[str, Any]]) -> bool:
            return bool(found) and all(t.get("health") == "up" for t in found)

        return poll(of_job, all_up, timeout_s, f"prometheus: job {job!r} up")

    def alerts(self) -> list[dict[str, Any]]:
        """Alerts as Prometheus itself sees them (pending or firing), from `/api/v1/alerts`."""
        body = decode_json(self.call("GET", "/api/v1/alerts"), "prometheus alerts")
        return cast(list[dict[str, Any]], body["data"]["alerts"])

    def reload(self) -> None:
        """POST /-/reload: Prometheus answers once the new config is applied, or 500 with the reason."""
        response = self.call("POST", "/-/reload")
        if response.status_code != 200:
            raise QueryFailed(f"prometheus reload: HTTP {response.status_code}: {response.text.strip()}")

    def configure(
        self,
        targets: Sequence[ScrapeTarget] | None = None,
        rule_files: Sequence[Path] | None = None,
        alertmanagers: Sequence[str] | None = None,
    ) -> None:
        """Replace the given parts of the config, check it with promtool and reload; what is None stays."""
        if targets is not None:
            self.targets = tuple(targets)
        if rule_files is not None:
            self.rule_files = tuple(rule_files)
        if alertmanagers is not None:
            self.alertmanagers = tuple(alertmanagers)
        self._write_config()
        self.reload()

    @contextmanager
    def extended(self, targets: Sequence[ScrapeTarget] = (), rule_files: Sequence[Path] = ()) -> Iterator[Prometheus]:
        """Add jobs and rule files for the duration of a block, then restore the previous config, so tests can
        share one session-wide Prometheus without leaking their targets into each other."""
        before = (self.targets, self.rule_files)
        self.configure(targets=(*self.targets, *targets), rule_files=(*self.rule_files, *rule_files))
        try:
            yield self
        finally:
            self.configure(targets=before[0], rule_files=before[1])
