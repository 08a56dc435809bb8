"""Config section `dashboards:`: where the Grafana that shows the generated dashboards (dashboards/json/) answers,
so the status page can link to them."""

from pulse.config.types import HttpUrl, Section


class DashboardsConfig(Section):
    """The Grafana the generated dashboards are provisioned in; the status page links to them when set."""

    grafana_url: HttpUrl | None = None
    """Base URL of that Grafana (e.g. http://127.0.0.1:3000); links are `<grafana_url>/d/<dashboard uid>`."""
