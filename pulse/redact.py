"""The one redaction of secrets in anything kafka-pulse shows: log lines, error messages, banners, the Burrow
config routes and `check`'s report. Secret fields are `SecretStr` and never rendered; what this catches is a secret
inside free text: the `user:password@` of a URL, an `Authorization` header, a `password=...` pair.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"

# `scheme://userinfo@`: the userinfo runs to the last `@` before the host's end (a raw `@` in a password is common),
# stopping at whitespace and quotes so it never swallows the next word or a JSON string's end.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s\"'<>]*)@")
_AUTH_HEADER = re.compile(
    r"(?i)\b(?P<key>(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)(?P<scheme>(?:basic|bearer)\s+)?(?P<value>[^\s\"',;}]+)"
)
_SECRET_PAIR = re.compile(
    r"(?i)(?P<key>\b[\w.\-]*(?:password|passwd|secret|token|api[_-]?key)=)(?P<value>[^\s\"',;}&]+)"
)
"""`password=...` in a query string or a `key=value` line; `key: value` is left alone, as config messages read
`http.basic_auth.password: is empty`."""


def redact_url(url: str) -> str:
    """`https://user:pass@host/x` -> `https://***@host/x`; a URL without userinfo is returned unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{REDACTED}@{host}"))


def redact_text(text: str) -> str:
    """`text` with every URL userinfo, Authorization value and `password=`/`token=` value replaced by `***`."""
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['key']}{m['scheme'] or ''}{REDACTED}", text)
    return _SECRET_PAIR.sub(lambda m: f"{m['key']}{REDACTED}", text)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose whole output (message, arguments, traceback) goes through `redact_text`."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))
