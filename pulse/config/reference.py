"""The config reference (docs/config.md) written from the models, as gunicorn writes its settings doc from its
`Setting`s: every key's dotted path, type, default and field docstring, so the reference cannot drift from the code.
`scripts/build_config_doc.py` writes it; a unit test compares it with the committed copy.
"""

import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import AfterValidator, BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from pulse.config.field_docs import field_docs
from pulse.config.root import PulseConfig

DOC_PATH = Path("docs/config.md")
"""Where the reference is committed, relative to the repository root."""
COMMAND = "python3 scripts/build_config_doc.py"
"""The command that rewrites it; the test that finds it stale prints this."""

_CHECKED_TYPES = {
    "_check_host_port": "host:port",
    "_check_regex": "regex",
    "_check_existing_file": "path to an existing file",
    "_resolve_dir": "directory path",
    "_check_name": "name",
    "_check_topic": "topic name",
    "_at_most_a_month": "seconds",
    "http_url.<locals>.check": "http(s) URL",
}
"""Our `Annotated` types by their validator's qualified name: the type a reader understands, not `str`."""

_INTRO = """\
# Config reference

<!-- Generated file: edit pulse/config/ and run `{command}`. -->

Generated file: edit the models in `pulse/config/` (each field's docstring is its description here) and run
`{command}`; `tests/unit/pulse/test_config_doc.py` fails when this copy is stale.

One YAML file (`--config FILE` or `$KAFKA_PULSE_CONFIG`), validated before anything starts; every problem is
reported in one pass with its key path (`clusters[0].bootstrap_servers[1]: 'kafka1' is not host:port`). Unknown
keys are refused. `${{VAR}}`, `${{VAR:-default}}` and `$${{` (a literal `${{`) substitute environment variables into
string values: give every key marked **secret** that way, never in the file. Durations are in seconds (`_s` keys,
at most 31 days). Examples: `examples/minimal.yaml`, `examples/production.yaml` (SASL_SSL, JMX login, every
section), `examples/slo-only.yaml`.

Paths: `a.b` is key `b` of section `a`; `a[]` is each item of list `a`; `a.<name>` is each key of map `a`.
"""


@dataclass(frozen=True)
class Section:
    """One table of the reference: the keys of one model found at `path`."""

    path: str
    model: type[BaseModel]
    note: str = ""


def reference() -> str:
    """The whole of docs/config.md."""
    parts = [_INTRO.format(command=COMMAND)]
    for section in _sections(PulseConfig, "", ""):
        parts.append(_render(section))
    return "\n".join(parts)


def undocumented_fields() -> list[str]:
    """Paths of config keys without a docstring (a unit test keeps this empty)."""
    return [
        _join(section.path, name)
        for section in _sections(PulseConfig, "", "")
        for name in section.model.model_fields
        if not _description(section.model, name).strip()
    ]


def _sections(model: type[BaseModel], path: str, note: str) -> Iterator[Section]:
    """`model`'s table, then its nested models' tables depth first, in field order (deterministic)."""
    yield Section(path, model, note)
    for name, info in model.model_fields.items():
        field_path = _join(path, name)
        nested = _models(info.annotation)
        for sub, suffix in nested:
            sub_note = _member_note(sub) if len(nested) > 1 else ""
            yield from _sections(sub, field_path + suffix, sub_note)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _models(annotation: Any, suffix: str = "") -> list[tuple[type[BaseModel], str]]:
    """The models inside a field's type, each with the path suffix it takes (`[]` in a list, `.<key>` in a map)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, suffix)]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models(args[0], suffix)
    if origin is list:
        return _models(args[0], suffix + "[]")
    if origin is dict:
        return _models(args[1], suffix + ".<key>")
    found: list[tuple[type[BaseModel], str]] = []
    for arg in args:
        for model, sub in _models(arg, suffix):
            if model not in [m for m, _ in found]:
                found.append((model, sub))
    return found


def _member_note(model: type[BaseModel]) -> str:
    """Which member of a union a table describes, by its literal `type`/`method` key when it has one."""
    for key in ("type", "method"):
        info = model.model_fields.get(key)
        if info is not None and typing.get_origin(info.annotation) is Literal:
            values = " or ".join(f"`{v}`" for v in typing.get_args(info.annotation))
            return f"when `{key}` is {values}"
    return f"one form: `{model.__name__}`"


def _render(section: Section) -> str:
    title = f"`{section.path}`" if section.path else "Top level"
    heading = f"## {title}" + (f" ({section.note})" if section.note else "")
    lines = [heading, ""]
    lines += [_one_line(section.model.__doc__ or ""), ""]
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    for name, info in section.model.model_fields.items():
        key = _join(section.path, name)
        cells = [f"`{key}`", _type_text(info), _default_text(info), _describe(section.model, name, info)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")


def _description(model: type[BaseModel], name: str) -> str:
    """A key's description: its attribute docstring (`Field(description=...)` would win, though none uses it)."""
    return model.model_fields[name].description or field_docs(model).get(name, "")


def _describe(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    text = _description(model, name)
    return f"**secret**. {text}" if _is_secret(info.annotation) else text


def _is_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    return any(_is_secret(arg) for arg in typing.get_args(annotation))


def _type_text(info: FieldInfo) -> str:
    return _type_name(info.annotation, list(info.metadata))


def _type_name(annotation: Any, metadata: list[Any]) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        inner = [m for arg in args[1:] for m in (arg.metadata if isinstance(arg, FieldInfo) else [arg])]
        return _type_name(args[0], [*inner, *metadata])
    bounds = _bounds(metadata)
    for item in metadata:
        if isinstance(item, AfterValidator) and item.func.__qualname__ in _CHECKED_TYPES:
            return _CHECKED_TYPES[item.func.__qualname__] + bounds
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        names = " or ".join(dict.fromkeys(_type_name(a, []) for a in members))
        return (names + bounds) + (" or null" if len(members) < len(args) else "")
    if origin is Literal:
        return " | ".join(f"`{v}`" for v in args)
    if origin is list:
        return f"list of {_type_name(args[0], [])}" + bounds
    if origin is dict:
        return "map" if args[1] is Any else f"map of {_type_name(args[0], [])} to {_type_name(args[1], [])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation))) + bounds


_SCALARS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Decimal: "decimal",
    Path: "path",
    SecretStr: "string",
    typing.Any: "any",
}


def _bounds(metadata: list[Any]) -> str:
    """`annotated_types` bounds as text: ` (> 0, <= 60)`."""
    found = []
    for item in metadata:
        for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("min_length", "length >=")):
            value = getattr(item, attr, None)
            if value is not None and not isinstance(item, FieldInfo):
                found.append(f"{sign} {_scalar(value)}")
    return f" ({', '.join(found)})" if found else ""


def _default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        factory: Any = info.default_factory
        return f"`{json.dumps(factory())}`"
    if info.default is PydanticUndefined:
        return "required"
    if isinstance(info.default, BaseModel):
        return "see its table"
    return f"`{_scalar(info.default)}`"


def _scalar(value: Any) -> str:
    """A default as it is written in YAML: `null`, `true`, `1024`, `0.002`, `.*`."""
    if value is None:
        return "null"
    if value == "":
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1000:
        return str(int(value))
    return str(value)
