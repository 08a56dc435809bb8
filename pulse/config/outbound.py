"""Login and trust for kafka-pulse's outbound HTTP clients (Alertmanager, the Pushgateway, a Prometheus SLI source):
one shape, read by the one client factory in pulse/http/client.py."""

from typing import Self

from pydantic import SecretStr, field_validator, model_validator

from pulse.config.http import BasicAuthConfig
from pulse.config.types import ExistingFile, Section
from pulse.envsubst import config_problem


class HttpClientConfig(Section):
    """How kafka-pulse logs in to an HTTP service and which CA it trusts. Give secrets as `${VAR}`; a URL's own
    `user:password@` works too, but is then kept in the config file."""

    basic_auth: BasicAuthConfig | None = None
    """HTTP basic auth sent with every request."""
    bearer_token: SecretStr | None = None
    """`Authorization: Bearer <token>` sent with every request (instead of basic_auth)."""
    ca_file: ExistingFile | None = None
    """PEM file of the CA(s) that signed the service's certificate, for https URLs; default: the system's CAs."""

    @field_validator("bearer_token")
    @classmethod
    def _token_not_empty(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None and not token.get_secret_value().strip():
            raise ValueError("is empty; give the token (e.g. ${ALERTMANAGER_TOKEN}) or remove the key")
        return token

    @model_validator(mode="after")
    def _one_login(self) -> Self:
        if self.basic_auth is not None and self.bearer_token is not None:
            raise config_problem("give basic_auth or bearer_token, not both", ("bearer_token",))
        return self
