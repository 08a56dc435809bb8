"""Config section `http:`: the listener shared by /metrics, the Burrow v3 API and the status page."""

from pydantic import Field, SecretStr, field_validator

from pulse.config.types import ExistingFile, HostPort, PositiveSeconds, Section


class BasicAuthConfig(Section):
    """An HTTP basic-auth login: the one our listener asks for (`http.basic_auth`), or one sent to a service."""

    username: str = Field(min_length=1)
    """The login's user name."""
    password: SecretStr
    """The login's password; not empty; give it as `${VAR}`."""

    @field_validator("password")
    @classmethod
    def _not_empty(cls, password: SecretStr) -> SecretStr:
        if not password.get_secret_value():
            raise ValueError("is empty; an empty password is a login anyone can guess (set one, or remove basic_auth)")
        return password


class HttpTlsConfig(Section):
    """Serve HTTPS with this certificate and key."""

    cert_file: ExistingFile
    """PEM certificate (chain) served."""
    key_file: ExistingFile
    """PEM private key of `cert_file`."""


class HttpConfig(Section):
    """The one HTTP listener: /metrics and the Burrow v3 API. Loopback by default."""

    listen: HostPort = "127.0.0.1:9308"
    """`host:port` to listen on; loopback by default, so nothing is exposed until chosen."""
    basic_auth: BasicAuthConfig | None = None
    """Login every route asks for (401 without it); absent means no login and reads only."""
    tls: HttpTlsConfig | None = None
    """Serve HTTPS; absent means plain HTTP."""
    allow_unauthenticated_writes: bool = False
    """Accept requests that change state (Burrow's DELETE of a group, POST /v3/admin/loglevel) without
    `basic_auth`; off by default, so a listener without a login serves reads only (403 for anything else)."""
    request_timeout_s: PositiveSeconds = Field(default=30.0, le=3600)
    """A client must complete its TLS handshake and send its whole request within this, however slowly it drips
    the bytes (408, then closed); writing the answer gets as long again. Bounds the threads a slow client holds."""
