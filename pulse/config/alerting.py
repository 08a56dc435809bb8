"""Config section `alerting:`: the Alertmanager sink and its on-disk spool (pulse/alerts/; docs/alerting.md)."""

from typing import Self
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from pulse.config.outbound import HttpClientConfig
from pulse.config.types import ConfigRelativeDir, HttpUrl, PositiveSeconds, Seconds
from pulse.envsubst import config_problem
from pulse.names import LABEL_NAME, LABEL_PLACEHOLDER


class AlertingConfig(HttpClientConfig):
    """Where alerts go (Alertmanager v2 API) and how they survive its absence; off by default (it needs a URL).
    `basic_auth`, `bearer_token` and `ca_file` are the login and CA for Alertmanager (pulse/config/outbound.py)."""

    enabled: bool = False
    """Send alerts (SLO pages and tickets, lag incidents, the heartbeat); needs `alertmanager_url`."""
    alertmanager_url: HttpUrl | None = None
    """Alertmanager's base URL, e.g. `http://alertmanager:9093`; a `user:password@` is never shown."""
    spool_dir: ConfigRelativeDir | None = None
    """Where alerts wait while Alertmanager is unreachable; default `<state dir>/alert-spool`. A relative path is
    relative to the config file."""
    spool_max_bytes: int = Field(default=16 * 1024 * 1024, ge=64 * 1024, le=1 << 30)
    """Bound of the spool file; past it the oldest waiting alerts are dropped (and counted)."""
    timeout_s: PositiveSeconds = Field(default=5.0, le=60)
    """Per POST to Alertmanager; a slower answer counts as a failure and the alerts are spooled."""
    retry_after_s: PositiveSeconds = 10.0
    """After a failure, alerts go straight to the spool for this long instead of waiting on the network again."""
    resend_interval_s: PositiveSeconds = 60.0
    """How often open alerts are resent (at least every cycle of the component that raises them)."""
    keepalive_cycles: int = Field(default=4, ge=2, le=100)
    """Firing alerts carry `endsAt = now + keepalive_cycles x resend_interval_s`: missed cycles before Alertmanager
    resolves them by itself (Prometheus uses 4)."""
    resolved_retention_s: Seconds = 300.0
    """How long a resolved alert keeps being resent, for an Alertmanager that missed it."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Added to every alert for routing (e.g. `team: kafka`, `env: prod`); identity, so keep them constant. Not
    `alertname` or `severity` (the raising component sets those), and no empty values."""
    runbook_url: str | None = None
    """Runbook link template for the `runbook_url` annotation; `{label}` is replaced by that label's value
    (URL-quoted), e.g. `https://runbooks.example.com/kafka/{alertname}#{slo}`."""

    @model_validator(mode="after")
    def _url_when_enabled(self) -> Self:
        if self.enabled and self.alertmanager_url is None:
            raise config_problem("required when alerting is enabled", ("alertmanager_url",))
        return self

    @field_validator("labels")
    @classmethod
    def _routing_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for name, value in labels.items():
            if not LABEL_NAME.fullmatch(name):
                raise config_problem(f"{name!r} is not a label name (letters, digits, '_'; no leading digit)", (name,))
            if name in ("alertname", "severity"):
                raise config_problem(f"{name!r} is set by the component raising the alert, not here", (name,))
            if not value:
                raise config_problem("empty value: Alertmanager drops empty labels; remove the key instead", (name,))
        return labels

    @field_validator("runbook_url")
    @classmethod
    def _runbook_template(cls, template: str | None) -> str | None:
        if template is None:
            return None
        for name in LABEL_PLACEHOLDER.findall(template):
            if not LABEL_NAME.fullmatch(name):
                raise ValueError(f"{template!r}: {{{name}}} is not a label placeholder such as {{slo}}")
        if urlsplit(LABEL_PLACEHOLDER.sub("x", template)).scheme not in ("http", "https"):
            raise ValueError(f"{template!r} is not an http(s) URL template, e.g. https://runbooks.example.com/{{slo}}")
        return template
