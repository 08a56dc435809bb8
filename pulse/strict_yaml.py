"""Strict YAML for config and spec files: duplicate keys refused, and the document bounded (nesting, recursive
aliases, values after alias expansion) before anything is built from it. Imported by pulse/envsubst.py's `read_tree`
only when a file is read: PyYAML is about 20 ms of a command's start, which `check` without a config never needs.
"""

from collections.abc import Hashable
from typing import Any

import yaml

from pulse.errors import ConfigError

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
