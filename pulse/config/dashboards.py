"""Config section `dashboards:`: where the Grafana that shows the generated dashboards (dashboards/json/) answers,
so the status page can link to them."""

from urllib.parse import urlsplit

from pydantic import field_validator

from pulse.config.types import HttpUrl, Section
from pulse.redact import redact_url


class DashboardsConfig(Section):
    """The Grafana the generated dashboards are provisioned in; the status page links to them when set."""

    grafana_url: HttpUrl | None = None
    """Base URL of that Grafana (e.g. http://127.0.0.1:3000); links are `<grafana_url>/d/<dashboard uid>`. Without
    a login (`user:password@`): the URL is shown to every reader of the status page."""

    @field_validator("grafana_url")
    @classmethod
    def _no_login(cls, url: str | None) -> str | None:
        if url is not None and "@" in urlsplit(url).netloc:
            raise ValueError(
                f"{redact_url(url)!r} holds a login (user:password@), which the status page would show to every "
                "reader; remove it (readers log in to Grafana themselves)"
            )
        return url
