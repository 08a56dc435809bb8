"""The config file as a plain tree, before and after pulse/config/ validates it: strict YAML parsing,
`${VAR}` substitution on the parsed tree, and pydantic errors reworded as `key.path[i]: reason`.
"""

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel
from pydantic_core import ErrorDetails, PydanticCustomError

from pulse.redact import redact_text

Loc = tuple[str | int, ...]
"""Where a value sits in the tree: mapping keys and list indexes from the root, as pydantic's `loc`."""

# --- YAML ---------------------------------------------------------------------------------------------------


def read_tree(text: str, source: str) -> dict[Any, Any]:
    """Parse YAML `text` into a mapping (an empty document is `{}`); ConfigError names `source`, line, column. The
    loader (pulse/strict_yaml.py) is imported on the first file read."""
    from pulse.strict_yaml import read_tree as read_yaml

    return read_yaml(text, source)


# --- ${VAR} substitution ------------------------------------------------------------------------------------

# `$${` is the escape for a literal `${`; `${...}` is a reference; a `${` with no closing brace is malformed.
_TOKEN = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_REFERENCE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


@dataclass(frozen=True)
class SubstitutionProblem:
    """A string whose `${...}` could not be resolved; the value is left as written."""

    loc: Loc
    """Path of the string in the tree."""
    reason: str
    """What is wrong, naming the variable, e.g. `environment variable KAFKA_PASSWORD is not set`."""


def substitute(tree: Any, environ: Mapping[str, str]) -> tuple[Any, list[SubstitutionProblem]]:
    """Return a copy of `tree` with `${VAR}` references resolved from `environ`, and every problem found.

    Syntax, after POSIX sh: `${VAR}` is the value of VAR and an error when VAR is unset; `${VAR:-default}` is
    the default when VAR is unset or empty; `$${` is a literal `${`. Only string values are rewritten, after
    YAML parsing, so a value such as `p: {x}` stays one string and cannot add keys. A string with a problem
    is kept as written so the caller can still validate the rest and report everything in one pass.
    """
    problems: list[SubstitutionProblem] = []
    return _walk(tree, (), environ, problems), problems


def _walk(node: Any, loc: Loc, environ: Mapping[str, str], problems: list[SubstitutionProblem]) -> Any:
    if isinstance(node, str):
        return _substitute_string(node, loc, environ, problems)
    if isinstance(node, dict):
        return {key: _walk(value, (*loc, key), environ, problems) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk(item, (*loc, index), environ, problems) for index, item in enumerate(node)]
    return node


def _substitute_string(text: str, loc: Loc, environ: Mapping[str, str], problems: list[SubstitutionProblem]) -> str:
    found: list[str] = []

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        body = match.group(1)
        if body is None:
            found.append("'${' without a closing '}' (write '$${' for a literal '${')")
            return token
        reference = _REFERENCE.fullmatch(body)
        if reference is None:
            found.append(f"{token!r} is not a valid reference; write ${{NAME}} or ${{NAME:-default}}")
            return token
        name, default = reference.group("name"), reference.group("default")
        value = environ.get(name)
        if default is not None and not value:
            return default
        if value is None:
            found.append(f"environment variable {name} is not set")
            return token
        return value

    result = _TOKEN.sub(replace, text)
    if found:
        problems.extend(SubstitutionProblem(loc, reason) for reason in found)
        return text
    return result


# --- error wording ------------------------------------------------------------------------------------------


def format_key_path(loc: Loc) -> str:
    """`("clusters", 0, "bootstrap_servers", 1)` -> `clusters[0].bootstrap_servers[1]`."""
    path = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


def config_problem(reason: str, at: Loc = ()) -> PydanticCustomError:
    """A validator's error whose key path extends `at` below the validated field, for `describe_error`."""
    return PydanticCustomError("pulse", "{reason}", {"reason": reason, "at": at})


def describe_error(error: ErrorDetails, root: type[BaseModel]) -> tuple[Loc, str]:
    """Word one pydantic error of a `root` model for someone editing the YAML: (key path, reason).

    Errors of type `pulse` carry `ctx={"reason": ..., "at": loc}` where `at` extends the path below the
    validated field (pydantic stops at the field, e.g. at `clusters` for a duplicate `clusters[1].name`).
    Input values are echoed to help find the bad line, except under a key containing "password"; every reason goes
    through pulse/redact.py, as validators may quote a URL with its `user:password@`.
    """
    # Union members are tagged `~name` (a discriminator's tag); the tag is no key of the file, so it is dropped.
    loc: Loc = tuple(part for part in error["loc"] if not (isinstance(part, str) and part.startswith("~")))
    ctx = error.get("ctx", {})
    kind = error["type"]
    if kind == "pulse":
        return (*loc, *ctx["at"]), redact_text(str(ctx["reason"]))
    if kind == "value_error":
        return loc, redact_text(str(ctx["error"]))
    if kind == "missing":
        return loc, "required key is missing"
    if kind == "extra_forbidden":
        return loc[:-1], _unknown_key(root, loc[:-1], loc[-1])
    reason = error["msg"]
    value = error["input"]
    secret = any(isinstance(part, str) and ("password" in part or "token" in part) for part in loc)
    if not secret and isinstance(value, str | int | float | bool) and len(repr(value)) <= 80:
        reason += f" (got {redact_text(repr(value))})"
    return loc, reason


def _unknown_key(root: type[BaseModel], parent: Loc, key: str | int) -> str:
    """`unknown key 'x'`, with the closest known key of that section when one is near (a typo)."""
    known = _section_keys(root, parent)
    close = difflib.get_close_matches(str(key), known, n=1)
    if close:
        return f"unknown key {key!r}; did you mean {close[0]!r}?"
    return f"unknown key {key!r}; known keys: {', '.join(known)}" if known else f"unknown key {key!r}"


def _section_keys(root: type[BaseModel], loc: Loc) -> list[str]:
    """The keys the model at `loc` accepts, found by walking field annotations down from `root`."""
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None:
            return []
        if isinstance(part, str):  # list indexes keep the item model
            field = model.model_fields.get(part)
            model = _model_in(field.annotation) if field is not None else None
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model inside `X`, `X | None`, `list[X]` or `Annotated[X, ...]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        model = _model_in(arg)
        if model is not None:
            return model
    return None
