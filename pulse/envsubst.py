"""The config file as a plain tree, before and after pulse/config/ validates it: strict YAML parsing,
`${VAR}` substitution on the parsed tree, and pydantic errors reworded as `key.path[i]: reason`.
"""

import difflib
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

import yaml
from pydantic import BaseModel
from pydantic_core import ErrorDetails, PydanticCustomError

from pulse.errors import ConfigError
from pulse.redact import redact_text

Loc = tuple[str | int, ...]
"""Where a value sits in the tree: mapping keys and list indexes from the root, as pydantic's `loc`."""

# --- YAML ---------------------------------------------------------------------------------------------------


MAX_DEPTH = 64
"""Deepest nesting a config or spec file may have (aliases expanded); a real one stays under 10."""
MAX_VALUES = 250_000
"""Most values (scalars, lists, mappings) a file may hold once its aliases are expanded: a 2,000-broker fleet with
1,000 SLOs is well under it, a ~1 KB alias bomb (a billion values) is refused before anything walks it."""


class _Unbounded(yaml.composer.ComposerError):
    """The document breaks one of the bounds above: valid YAML, refused before it is built."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, which PyYAML would silently resolve to the last one, and bounds the
    document (nesting depth, recursive aliases, values after alias expansion) before anything is built from it."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # PyYAML composes recursively: refused here, thousands of levels would end in a RecursionError.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _Unbounded(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            _check_expanded(node)
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check_expanded(root: yaml.Node) -> None:
    """Refuse a node graph that contains itself, or whose expansion (an alias counts as a copy of its anchor) is
    deeper than MAX_DEPTH or larger than MAX_VALUES; sizes are memoised per node, so this costs one pass."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if size[key] > MAX_VALUES:
                reason = f"more than {MAX_VALUES:,} values once its aliases are expanded (an alias bomb?)"
                raise _Unbounded(None, None, reason, node.start_mark)
            if depth[key] > MAX_DEPTH:
                reason = f"nested deeper than {MAX_DEPTH} levels once its aliases are expanded"
                raise _Unbounded(None, None, reason, node.start_mark)
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise _Unbounded(None, None, "recursive alias: a value contains itself", child.start_mark)
            if id(child) not in size:
                stack.append((child, False))


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, yaml.Mark] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if isinstance(key, Hashable) and key_node.tag != "tag:yaml.org,2002:merge":
            if key in seen:
                reason = f"duplicate key {key!r} (first at line {seen[key].line + 1})"
                raise yaml.constructor.ConstructorError(None, None, reason, key_node.start_mark)
            seen[key] = key_node.start_mark
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_tree(text: str, source: str) -> dict[Any, Any]:
    """Parse YAML `text` into a mapping (an empty document is `{}`); ConfigError names `source`, line, column."""
    try:
        tree = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        context = f" ({exc.context})" if exc.context else ""
        kind = "refused" if isinstance(exc, _Unbounded) else "YAML syntax error"
        raise ConfigError(f"{source}: {where}{kind}: {exc.problem}{context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: YAML syntax error: {exc}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a constructor's own check: `2024-13-45`, `!!int abc`
        raise ConfigError(f"{source}: a value cannot be read: {exc} (quote it to keep it a string)") from None
    except (RecursionError, MemoryError) as exc:  # bounded above; kept as a config error should a bound be missed
        raise ConfigError(f"{source}: the YAML is too large or too deeply nested ({type(exc).__name__})") from None
    if tree is None:
        return {}
    if not isinstance(tree, dict):
        kind = "a list" if isinstance(tree, list) else f"a {type(tree).__name__}"
        raise ConfigError(f"{source}: the top level must be a mapping of sections (clusters: ...), not {kind}")
    return tree


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
