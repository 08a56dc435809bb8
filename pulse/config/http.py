"""Config section `http:`: the listener shared by /metrics, the Burrow v3 API and the status page."""

import re
from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr, field_validator

from pulse.config.types import ExistingFile, HostPort, PositiveSeconds, Section

_ALLOWED_HOST = re.compile(r"(?:\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(?P<port>[0-9]{1,5}))?")


def _check_allowed_host(value: str) -> str:
    """`name` or `name:port` as a `Host` header carries it (IPv6 in brackets); lower-cased."""
    match = _ALLOWED_HOST.fullmatch(value.strip().lower())
    if match is None or not 0 < int(match["port"] or 1) < 65536:
        raise ValueError(f"{value!r} is not host or host:port (no scheme, path or userinfo; IPv6 in brackets)")
    return value.strip().lower()


AllowedHost = Annotated[str, AfterValidator(_check_allowed_host)]


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
    allowed_hosts: list[AllowedHost] = Field(default_factory=list)
    """Names a request's `Host` may use besides the listener's own address and localhost, 127.0.0.1, [::1] (any
    port): the DNS name clients reach it by (`pulse.example.com` allows any port, `pulse.example.com:9308` that
    port only). Any other `Host` is answered 421, so a DNS-rebound name cannot read a login-less listener."""
    request_timeout_s: PositiveSeconds = Field(default=30.0, le=3600)
    """A client must complete its TLS handshake and send its whole request within this, however slowly it drips
    the bytes (408, then closed); writing the answer gets as long again. Bounds the threads a slow client holds."""
