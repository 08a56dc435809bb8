"""Config section `http:`: the listener shared by /metrics, the Burrow v3 API and the status page."""

from pydantic import Field, SecretStr

from pulse.config.types import ExistingFile, HostPort, Section


class BasicAuthConfig(Section):
    """HTTP basic auth for the /metrics and lag API listener."""

    username: str = Field(min_length=1)
    password: SecretStr


class HttpTlsConfig(Section):
    """Serve HTTPS with this certificate and key."""

    cert_file: ExistingFile
    key_file: ExistingFile


class HttpConfig(Section):
    """The one HTTP listener: /metrics and the Burrow v3 API. Loopback by default."""

    listen: HostPort = "127.0.0.1:9308"
    basic_auth: BasicAuthConfig | None = None
    tls: HttpTlsConfig | None = None
