"""A real Alertmanager (Debian `prometheus-alertmanager`) on loopback, routing every alert to one local receiver
(a webhook, and optionally a PagerDuty Events API v2 stand-in), as kafka-pulse's alert sink expects in production.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
from pulse.process import pid_alive, require_program

PACKAGE = "prometheus-alertmanager"
RECEIVER = "pulse"


@dataclass(frozen=True)
class AlertRouting:
    """The route timings; the defaults are short so a test sees a notification within a couple of seconds."""

    group_by: tuple[str, ...] = ("...",)
    """'...' groups by every label: each distinct alert is its own notification, easy to assert on."""
    group_wait_s: float = 1.0
    group_interval_s: float = 1.0
    repeat_interval_s: float = 3600.0
    """How often a still-firing alert is notified again; long by default so receivers are not flooded."""
    send_resolved: bool = True


def render_alertmanager_config(
    webhook_url: str,
    routing: AlertRouting | None = None,
    pagerduty_url: str | None = None,
    pagerduty_routing_key: str = "kafka-pulse-test-routing-key-0001",
) -> str:
    """alertmanager.yml with a default route to one receiver `pulse`: a webhook to `webhook_url` and, when
    `pagerduty_url` is given, a PagerDuty Events v2 config posting there; pure, so tests read it back."""
    routing = routing or AlertRouting()
    for where, url in (("webhook_url", webhook_url), ("pagerduty_url", pagerduty_url)):
        if url is not None and not url.startswith(("http://", "https://")):
            raise ConfigError(f"alertmanager: {where}: {url!r} is not an http(s) URL")
    receiver: dict[str, Any] = {
        "name": RECEIVER,
        "webhook_configs": [{"url": webhook_url, "send_resolved": routing.send_resolved}],
    }
    if pagerduty_url is not None:
        receiver["pagerduty_configs"] = [
            {"routing_key": pagerduty_routing_key, "url": pagerduty_url, "send_resolved": routing.send_resolved}
        ]
    config = {
        "route": {
            "receiver": RECEIVER,
            "group_by": list(routing.group_by),
            "group_wait": duration(routing.group_wait_s),
            "group_interval": duration(routing.group_interval_s),
            "repeat_interval": duration(routing.repeat_interval_s),
        },
        "receivers": [receiver],
    }
    return yaml.safe_dump(config, sort_keys=False)


def retarget_config(
    text: str,
    pagerduty_url: str,
    webhook_url: str,
    routing_key_file: Path,
    routing: AlertRouting | None = None,
) -> str:
    """An operator's alertmanager.yml (e.g. examples/alertmanager.yml) pointed at local receivers: every PagerDuty
    config posts to `pagerduty_url` with its key read from `routing_key_file`, every webhook posts to
    `webhook_url`, and, given `routing`, every route's timings are replaced; routes, inhibitions and templates
    stay as written. Pure."""
    config = yaml.safe_load(text)
    if not isinstance(config, dict) or not isinstance(config.get("route"), dict):
        raise ConfigError("alertmanager config: not a mapping with a `route`")
    config.setdefault("global", {})["pagerduty_url"] = pagerduty_url
    for receiver in config.get("receivers") or []:
        for pagerduty in receiver.get("pagerduty_configs") or []:
            pagerduty.pop("routing_key", None)
            pagerduty["routing_key_file"] = str(routing_key_file)
            pagerduty["url"] = pagerduty_url
        for webhook in receiver.get("webhook_configs") or []:
            webhook["url"] = webhook_url
    if routing is not None:
        pending = [config["route"]]
        while pending:
            route = pending.pop()
            timings = ("group_wait", "group_interval", "repeat_interval")
            if route is config["route"] or any(key in route for key in timings):
                route["group_wait"] = duration(routing.group_wait_s)
                route["group_interval"] = duration(routing.group_interval_s)
                route["repeat_interval"] = duration(routing.repeat_interval_s)
            pending.extend(route.get("routes") or [])
    return yaml.safe_dump(config, sort_keys=False)


class Alertmanager(LocalService):
    """Alertmanager with HA gossip disabled (`--cluster.listen-address=`): its default would bind 0.0.0.0:9094."""

    name = "alertmanager"
    ready_timeout_s = 30.0

    def __init__(
        self,
        workdir: Path,
        webhook_url: str,
        routing: AlertRouting | None = None,
        pagerduty_url: str | None = None,
        port: int | None = None,
        config_text: str | None = None,
    ) -> None:
        """`config_text`, when given, is used as alertmanager.yml instead of the rendered one-receiver config
        (see `retarget_config`); it is still checked with amtool before the start."""
        super().__init__(workdir, port)
        self.webhook_url = webhook_url
        self.routing = routing or AlertRouting()
        self.pagerduty_url = pagerduty_url
        self.config_text = config_text

    @property
    def config_path(self) -> Path:
        return self.workdir / "alertmanager.yml"

    def prepare(self) -> None:
        text = self.config_text or render_alertmanager_config(self.webhook_url, self.routing, self.pagerduty_url)
        self.config_path.write_text(text)
        run_checker([require_program("amtool", PACKAGE), "check-config", str(self.config_path)], "alertmanager.yml")

    def argv(self) -> list[str]:
        return [
            require_program("prometheus-alertmanager", PACKAGE),
            f"--config.file={self.config_path}",
            f"--storage.path={self.workdir / 'data'}",
            f"--web.listen-address={self.address}",
            "--cluster.listen-address=",
        ]

    def is_ready(self) -> bool:
        return http_ok(self.http, "/-/ready")

    # --- API v2 ----------------------------------------------------------------------------------------------
    def alerts(self, active_only: bool = False) -> list[dict[str, Any]]:
        """`GET /api/v2/alerts`: every alert Alertmanager holds (labels, annotations, startsAt, status.state)."""
        params = {"active": "true", "silenced": "false", "inhibited": "false"} if active_only else {}
        response = self.call("GET", "/api/v2/alerts", params=params)
        if response.status_code != 200:
            raise QueryFailed(f"alertmanager alerts: HTTP {response.status_code}: {response.text.strip()}")
        return cast(list[dict[str, Any]], decode_json(response, "alertmanager alerts"))

    def post_alerts(self, alerts: Sequence[dict[str, Any]]) -> None:
        """`POST /api/v2/alerts`, the call kafka-pulse's alert sink makes; a rejected batch raises QueryFailed
        with Alertmanager's reason (e.g. a missing label set)."""
        response = self.call("POST", "/api/v2/alerts", json=list(alerts))
        if response.status_code != 200:
            raise QueryFailed(f"alertmanager post alerts: HTTP {response.status_code}: {response.text.strip()}")

    def notifications_sent(self, integration: str) -> int:
        """Notifications this process has completed through `integration` ("pagerduty", "webhook"), from its
        /metrics (`alertmanager_notification_latency_seconds_count`, observed once the receiver has answered)."""
        response = self.call("GET", "/metrics")
        wanted = f'alertmanager_notification_latency_seconds_count{{integration="{integration}"}} '
        for line in response.text.splitlines():
            if line.startswith(wanted):
                return int(float(line[len(wanted) :]))
        raise QueryFailed(f"alertmanager /metrics: no notification count for integration {integration!r}")

    @contextmanager
    def outage(self, sig: signal.Signals = signal.SIGKILL) -> Iterator[None]:
        """Alertmanager down for the body of a `with`: `sig` to its PID (SIGKILL: a crash, its in-memory alerts and
        unsaved notification log are lost; SIGTERM: a clean stop that saves them), then a restart on the same port
        and data directory, awaited until ready."""
        os.kill(self.pid, sig)
        poll(lambda: pid_alive(self.pid), lambda alive: not alive, 30, f"alertmanager pid {self.pid} gone ({sig.name})")
        self.stop()  # reap it and drop the HTTP client
        try:
            yield
        finally:
            self.start()

    def wait_for_alert(self, alertname: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """The first alert Alertmanager holds with this alertname, polled until it appears."""
        found = poll(
            lambda: [a for a in self.alerts() if a.get("labels", {}).get("alertname") == alertname],
            bool,
            timeout_s,
            f"alertmanager: alert {alertname!r}",
        )
        return found[0]
