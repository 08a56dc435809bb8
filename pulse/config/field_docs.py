"""The attribute docstrings of a config model, read from its source on demand.

They are the one description of each key (docs/config.md and the CLI options that set the same key show them).
Pydantic could read them at class creation (`use_attribute_docstrings`), but that parses every model's source on
every start: about a quarter of what importing the config costs `check`. Only the reference and `--help` need them.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import cache
from itertools import pairwise

from pydantic import BaseModel


@cache
def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> its docstring (cleaned as `inspect.cleandoc` does), from `model` and the models it extends; a
    field without one is absent. A subclass's docstring for a field wins over its base's."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            docs.update(_own_docs(cls))
    return docs


def _own_docs(cls: type[BaseModel]) -> dict[str, str]:
    """The docstrings written under the annotated attributes of `cls`'s own body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # defined outside a file (a test's exec): no source, no docstrings
        return {}
    body = next((node.body for node in ast.parse(source).body if isinstance(node, ast.ClassDef)), [])
    docs: dict[str, str] = {}
    for statement, following in pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs
