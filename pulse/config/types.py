"""Field types shared by the config sections (`Annotated` with their check), so each rule is written once and its
message is the same wherever the type is used.
"""

import importlib
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, ValidationInfo

from pulse.envsubst import config_problem
from pulse.locations import check_location
from pulse.names import NAME, TOPIC_NAME
from pulse.redact import redact_url


class Section(BaseModel):
    """Base of every config model: unknown keys are refused and a loaded config cannot be changed. Attribute
    docstrings describe the fields, read from the source only where they are shown (`field_docs`). No float field
    takes `.inf` or `.nan`: either would pass a `gt=0` bound and break the arithmetic that uses it."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def split_host_port(text: str) -> tuple[str, int]:
    """Split `host:port` (or `[v6addr]:port`) into its parts; ValueError says what is wrong and how to write it."""
    value = text.strip()
    if "@" in value:  # `user:password@host:port`: the login would be echoed with the address
        shown = f"***@{value.rpartition('@')[2]}"
        raise ValueError(f"{shown!r} is not host:port: a login does not belong in the address (use security.sasl)")
    if value.startswith("["):
        host, sep, port = value[1:].partition("]:")
    else:
        host, sep, port = value.rpartition(":")
        if ":" in host:
            raise ValueError(f"{text!r} is not host:port; write IPv6 addresses in brackets, e.g. [::1]:9092")
        if host and not NAME.fullmatch(host):
            raise ValueError(f"{text!r} is not host:port: {host!r} is not a host name or address")
    if not sep or not host:
        raise ValueError(f"{text!r} is not host:port (e.g. kafka1:9092)")
    if not port.isascii() or not port.isdigit():
        raise ValueError(f"{text!r} is not host:port: port {port!r} is not a number")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: port {int(port)} is out of range 1-65535")
    return host, int(port)


def _check_host_port(text: str) -> str:
    split_host_port(text)
    return text.strip()


def _check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    why = catastrophic_shape(pattern)
    if why is not None:
        raise ValueError(
            f"{pattern!r} {why}, which can backtrack for seconds on one hostile name; rewrite it without that "
            "(a character class such as [a-z0-9.-]+, or a possessive quantifier such as ++)"
        )
    return pattern


_PARSER: Any = importlib.import_module("re._parser")  # the stdlib's own parse tree, not typed by typeshed
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT"})
"""Quantifiers that backtrack; POSSESSIVE_REPEAT and atomic groups give nothing back, so they are safe to nest."""
_ANY = None
"""A first-character set that may hold any character."""


def catastrophic_shape(pattern: str) -> str | None:
    """Why `pattern` may take exponential time (a quantifier inside a quantifier, or overlapping alternatives
    under one), or None. Conservative: a few safe patterns are refused too, never a dangerous one of these shapes."""
    return _scan(_PARSER.parse(pattern), repeated=False)


def _scan(items: Iterable[tuple[Any, Any]], repeated: bool) -> str | None:
    """Walk a parse tree; `repeated` is True below a quantifier that repeats more than once."""
    for op, arg in items:
        name = str(op)
        if name in _REPEATS:
            _, high, body = arg
            if repeated and high > 1:
                return "nests a quantifier inside another quantifier"
            why = _scan(body, repeated or high > 1)
        elif name == "BRANCH":
            why = _overlap(arg[1]) if repeated else None
            why = why or next((w for alt in arg[1] if (w := _scan(alt, repeated))), None)
        elif name == "SUBPATTERN":
            why = _scan(arg[3], repeated)
        elif name == "ASSERT" or name == "ASSERT_NOT":
            why = _scan(arg[1], repeated)
        elif name == "GROUPREF_EXISTS":
            why = _scan(arg[1], repeated) or (_scan(arg[2], repeated) if arg[2] is not None else None)
        else:  # literals, classes, anchors; POSSESSIVE_REPEAT and ATOMIC_GROUP never backtrack into themselves
            why = None
        if why is not None:
            return why
    return None


def _overlap(alternatives: list[Any]) -> str | None:
    """Alternatives under a quantifier that can begin with the same character (or both match nothing) can split
    one input in exponentially many ways, as `(a|a)*` does."""
    seen: list[frozenset[int] | None] = []
    for alternative in alternatives:
        first = _first_characters(alternative)
        for other in seen:
            if first is _ANY or other is _ANY or first & other:
                return "repeats alternatives that can begin alike"
        seen.append(first)
    return None


def _first_characters(alternative: list[tuple[Any, Any]]) -> frozenset[int] | None:
    """The characters an alternative can begin with; -1 stands for the empty alternative; None for any."""
    if not alternative:
        return frozenset({-1})
    op, arg = alternative[0]
    if str(op) == "LITERAL":
        return frozenset({arg})
    if str(op) == "IN" and all(str(o) in ("LITERAL", "RANGE") for o, _ in arg):
        chars: set[int] = set()
        for o, a in arg:
            chars.update([a] if str(o) == "LITERAL" else range(a[0], a[1] + 1))
        return frozenset(chars)
    return _ANY


def _base_dir(info: ValidationInfo) -> Path | None:
    base_dir = info.context.get("base_dir") if isinstance(info.context, dict) else None
    return base_dir if isinstance(base_dir, Path) else None


def _check_existing_file(path: Path, info: ValidationInfo) -> Path:
    """Resolve a relative path against the config file's directory (as Prometheus does) and require a file."""
    resolved = _resolve_dir(path, info)
    if not resolved.is_file():
        state = "is not a file" if resolved.exists() else "does not exist"
        raise ValueError(f"file '{resolved}' {state}")
    return resolved


def _resolve_dir(path: Path, info: ValidationInfo) -> Path:
    """A relative path is relative to the config file's directory; it need not exist yet."""
    base_dir = _base_dir(info)
    return base_dir / path if base_dir is not None and not path.is_absolute() else path


def _check_location(location: str, info: ValidationInfo) -> str:
    return check_location(location, _base_dir(info))


def http_url(example: str) -> AfterValidator:
    """An http(s) URL with a host, trailing `/` dropped; a refusal shows `example` (the service's usual address)."""

    def check(url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{redact_url(url)!r} is not an http(s) URL, e.g. {example}")
        return url.rstrip("/")

    return AfterValidator(check)


def _check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(f"{name!r} may only contain letters, digits, '_', '.' and '-'")
    return name


def _check_topic(topic: str) -> str:
    if not TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
        raise ValueError(f"{topic!r} is not a Kafka topic name (1-249 of letters, digits, '.', '_', '-')")
    return topic


def upper(value: Any) -> Any:
    """Before-validator: accept `plain` for `PLAIN` in enumerations Kafka spells in capitals."""
    return value.upper() if isinstance(value, str) else value


HostPort = Annotated[str, AfterValidator(_check_host_port)]
"""`host:port`, port 1-65535."""
Regex = Annotated[str, AfterValidator(_check_regex)]
"""A Python regular expression matched with `re.search` (anchor with ^ and $ as in Burrow's allow/deny lists)."""
ExistingFile = Annotated[Path, AfterValidator(_check_existing_file)]
"""A file that must exist; relative paths are relative to the config file's directory."""
ConfigRelativeDir = Annotated[Path, AfterValidator(_resolve_dir)]
"""A directory relative to the config file's directory; it need not exist yet."""
StorageLocation = Annotated[str, AfterValidator(_check_location)]
"""A local directory (relative to the config file's directory) or a Hadoop filesystem URL handed to Spark as written
(pulse/locations.py)."""
HttpUrl = Annotated[str, http_url("http://127.0.0.1:9093")]
MAX_SECONDS = 31 * 86_400
"""Longest duration any `_s` key takes (a month): longer is a typo (ms for s) that would silence a component."""


def _at_most_a_month(seconds: float) -> float:
    # A validator, not `le=`: a field's own tighter `Field(le=60)` would be overridden by an `le` here.
    if seconds > MAX_SECONDS:
        raise ValueError(f"{seconds:g} s is longer than {MAX_SECONDS} s (31 days); is it in milliseconds?")
    return seconds


PositiveSeconds = Annotated[float, Field(gt=0, allow_inf_nan=False), AfterValidator(_at_most_a_month)]
"""A duration in seconds (`_s` keys) that must be longer than zero: an interval, a timeout, a deadline."""
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False), AfterValidator(_at_most_a_month)]
"""A duration in seconds that may be zero (a retention or a minimum distance that can be off)."""
Name = Annotated[str, AfterValidator(_check_name)]
"""Cluster and client names: letters, digits, `_`, `.` and `-` (they become label values and API path parts)."""
TopicName = Annotated[str, AfterValidator(_check_topic)]
"""A legal Kafka topic name."""

Item = TypeVar("Item")


def unique_by(key: Callable[[Item], object], field: str, noun: str, also: str) -> AfterValidator:
    """A list validator refusing a second item with the same `key`: `duplicate <noun> <value> (also <also>[i])`,
    reported at the second item's `field`."""

    def check(items: Sequence[Item]) -> Sequence[Item]:
        first: dict[object, int] = {}
        for index, item in enumerate(items):
            value = key(item)
            if value in first:
                raise config_problem(f"duplicate {noun} {value!r} (also {also}[{first[value]}])", (index, field))
            first[value] = index
        return items

    return AfterValidator(check)


def check_credentials(username: str | None, password: SecretStr | None) -> None:
    """A login is a username and a password together; one without the other is refused at the missing key."""
    if password is not None and username is None:
        raise config_problem("required when password is set", ("username",))
    if username is not None and password is None:
        raise config_problem("required when username is set", ("password",))
