"""HTTP basic auth for every listener: one parser (the scheme in any case, RFC 7617) and one constant-time check,
so no two listeners can disagree about a login again."""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass

from pulse.config import BasicAuthConfig
from pulse.http.router import Response

REALM = "kafka-pulse"


@dataclass(frozen=True)
class BasicAuth:
    """The login a listener requires."""

    username: str
    password: str

    @classmethod
    def from_config(cls, config: BasicAuthConfig | None) -> BasicAuth | None:
        return None if config is None else cls(config.username, config.password.get_secret_value())

    def __repr__(self) -> str:
        return f"BasicAuth(username={self.username!r}, password='**********')"


def parse_basic_auth(header: str) -> tuple[str, str] | None:
    """(username, password) of an `Authorization: Basic ...` header; None when it is absent or malformed."""
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        username, sep, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (username, password) if sep else None


def is_authorized(header: str, login: BasicAuth) -> bool:
    """Does an `Authorization` header carry exactly this login?"""
    parsed = parse_basic_auth(header)
    username, password = parsed or ("", "")
    # Both compared in constant time, and both always compared, so timing tells nothing about either.
    user_ok = hmac.compare_digest(username.encode(), login.username.encode())
    password_ok = hmac.compare_digest(password.encode(), login.password.encode())
    return parsed is not None and user_ok and password_ok


def unauthorized() -> Response:
    """The 401 every listener answers without the login; it names the config key, never the login."""
    challenge = (("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"'),)
    return Response(401, b"401 Unauthorized: this listener needs the login of http.basic_auth\n", headers=challenge)


def unauthenticated_write(method: str) -> Response:
    """The 403 a listener without a login answers to a request that could change state (Burrow's DELETE of a group,
    its log level POST): it names the two keys that allow it."""
    text = (
        f"403 Forbidden: {method} can change state and this listener has no login; set http.basic_auth, or "
        "http.allow_unauthenticated_writes: true to accept it without one\n"
    )
    return Response(403, text.encode())
