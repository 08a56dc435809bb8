"""The one way kafka-pulse builds an outbound HTTP client (Alertmanager, Pushgateway, Prometheus): the login and CA
of an `HttpClientConfig`, and no proxy variables or `.netrc` read from the environment (`trust_env=False`), so a
client behaves as its config says on every host."""

from __future__ import annotations

import ssl
from collections.abc import Generator
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from pulse.config.outbound import HttpClientConfig


class BearerAuth(httpx.Auth):
    """`Authorization: Bearer <token>` on every request; the token never appears in `repr`."""

    def __init__(self, token: str) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(token='**********')"


def split_userinfo(url: str) -> tuple[str, httpx.BasicAuth | None]:
    """`https://user:pass@host/x` -> (`https://host/x`, its basic auth): the login leaves the URL, so no message
    that names the URL (httpx's status errors do) can show it."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), httpx.BasicAuth(unquote(username), unquote(password))


def outbound_client(
    settings: HttpClientConfig | None,
    timeout_s: float,
    base_url: str = "",
    transport: httpx.BaseTransport | None = None,
    verify: ssl.SSLContext | None = None,
) -> httpx.Client:
    """An httpx client with `settings`' login (basic or bearer; else the userinfo of `base_url`) and CA file, the
    timeout for every phase of a request, no redirects followed and nothing taken from the environment. `verify`
    replaces the CA file's trust (`check` trusting the certificate our own listener serves)."""
    base_url, auth_in_url = split_userinfo(base_url) if base_url else ("", None)
    auth: httpx.Auth | None = auth_in_url
    trust: ssl.SSLContext | bool = True if verify is None else verify
    if settings is not None:
        if settings.basic_auth is not None:
            login = settings.basic_auth
            auth = httpx.BasicAuth(login.username, login.password.get_secret_value())
        elif settings.bearer_token is not None:
            auth = BearerAuth(settings.bearer_token.get_secret_value())
        if settings.ca_file is not None and verify is None:
            trust = ssl.create_default_context(cafile=str(settings.ca_file))
    return httpx.Client(
        base_url=base_url,
        auth=auth,
        verify=trust,
        timeout=httpx.Timeout(timeout_s),
        trust_env=False,
        follow_redirects=False,
        transport=transport,
    )
