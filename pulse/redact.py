"""The one redaction of secrets in anything kafka-pulse shows: log lines, error messages, banners, the Burrow
config routes and `check`'s report. Secret fields are `SecretStr` and never rendered; what this catches is a secret
inside free text: the `user:password@` of a URL, an `Authorization` header, a secret-named key's value in
`key=value`, dict, repr or JSON form (a client library logging its whole config), a secret query parameter.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"

# `scheme://userinfo@`: the userinfo runs to the last `@` before the host's end (a raw `@` in a password is common),
# stopping at whitespace and quotes so it never swallows the next word or a JSON string's end.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s\"'<>]*)@")
# Any scheme (`Basic`, `Bearer`, `Token`, `AWS4-HMAC-SHA256`, ...) is kept when a credential follows it; a lone
# value is the credential itself.
_AUTH_PARAM = r"[\w\-]+=(?:\"[^\"\n]*\"|[^\s\"',;}]+)"
_AUTH_HEADER = re.compile(
    r"(?i)\b(?P<key>(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<scheme>[A-Za-z][\w.+\-]*[ \t]+(?=[^\s\"',;}]))?"
    rf"(?P<value>{_AUTH_PARAM}(?:\s*,\s*{_AUTH_PARAM})*|[^\s\"',;}}]+)"
)
"""The credential is a token (`Bearer abc`) or a list of parameters (`Digest username="u", response="r"`)."""
_SECRET_WORD = r"(?:password|passwd|passphrase|secret|token|credential|api[_-]?key|private[_-]?key)"
"""A key holding one of these anywhere in its name holds a secret (`sasl_plain_password`, `client_secret`)."""
_VALUE = r"(?P<value>[bB]?\"(?:[^\"\\\n]|\\.)*\"|[bB]?'(?:[^'\\\n]|\\.)*'|[^\s\"',;}&)\]]+)"
"""A quoted string (escapes honoured, so `'it\\'s'` ends at its own quote) or a bare word."""
_QUOTED_KEY = re.compile(rf"(?i)(?P<key>(?P<q>[\"'])[\w.\-]*{_SECRET_WORD}[\w.\-]*(?P=q)\s*:\s*){_VALUE}")
"""`'sasl_plain_password': '...'` (a dict's repr) and `"password": "..."` (JSON)."""
_SECRET_PAIR = re.compile(rf"(?i)(?P<key>\b[\w.\-]*{_SECRET_WORD}[\w.\-]*=){_VALUE}")
"""`password=...` in a query string, a `key=value` line or a repr (`ssl_password='...'`); `key: value` is left
alone, as config messages read `http.basic_auth.password: is empty`."""
_QUERY_SECRET = re.compile(r"(?i)(?P<key>[?&;](?:[\w.\-]*signature|sig|key|auth|jwt)=)(?P<value>[^&;#\s\"'<>]+)")
"""Query parameters that are secrets without a secret word in their name (`?sig=`, `?key=`, `X-Amz-Signature=`)."""
_NOT_SECRET = frozenset({"none", "null", "true", "false", '""', "''", REDACTED})


def _masked(match: re.Match[str]) -> str:
    """The match's key with its value replaced by `***`, in the value's own quotes; `None` and `null` stay."""
    value = match["value"]
    if value.lower() in _NOT_SECRET:
        return match[0]
    quote = value.lstrip("bB")[0]
    if quote not in "\"'":  # a bare value: in JSON (`"api_key": 123`) it becomes a string, so the text stays JSON
        quote = match.groupdict().get("q") or ""
    return f"{match['key']}{quote}{REDACTED}{quote}"


def redact_url(url: str) -> str:
    """`https://user:pass@host/x?token=t` -> `https://***@host/x?token=***`; a URL without userinfo or a secret
    query parameter is returned unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if "@" in parts.netloc:
        url = urlunsplit(parts._replace(netloc=f"{REDACTED}@{parts.netloc.rpartition('@')[2]}"))
    return _QUERY_SECRET.sub(_masked, _SECRET_PAIR.sub(_masked, url))


def redact_text(text: str) -> str:
    """`text` with every URL userinfo, Authorization credential, secret-named value and secret query parameter
    replaced by `***`."""
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['key']}{m['scheme'] or ''}{REDACTED}", text)
    text = _QUOTED_KEY.sub(_masked, text)
    text = _SECRET_PAIR.sub(_masked, text)
    return _QUERY_SECRET.sub(_masked, text)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose whole output (message, arguments, traceback) goes through `redact_text`."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))
