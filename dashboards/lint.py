"""Structural checks of dashboard JSON, without a Grafana (none is installable here): what Grafana
would silently get wrong on load. `dashboards build` refuses to write dashboards that fail them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dashboards.grafana import DATASOURCE_UID
from dashboards.layout import GRID_WIDTH

GRAFANA_MACROS = frozenset({"__rate_interval", "__interval", "__range"})
"""The global variables Grafana fills in for Prometheus queries that these dashboards may use; tests substitute
exactly these before running a query, so any other `$__x` is refused."""
PANEL_TYPES = frozenset({"row", "stat", "timeseries", "table", "heatmap", "bargauge"})
_REFERENCE = re.compile(r"\$\{(\w+)(?:[.:][^}]*)?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]")
"""Grafana's three spellings: `${var}` (with `:format` or `.field`), `$var`, and the deprecated `[[var]]`."""


class DashboardInvalid(ValueError):
    """Generated dashboards failed the structural checks; the message lists every problem."""


def variable_references(text: str) -> list[str]:
    """Names of the template variables `text` refers to, in order; `$1` (a regex group of label_replace) is none."""
    names = []
    for match in _REFERENCE.finditer(text):
        name = next(g for g in match.groups() if g is not None)
        if not name.isdigit():
            names.append(name)
    return names


@dataclass(frozen=True)
class _Box:
    panel: str
    x: int
    y: int
    w: int
    h: int

    def overlaps(self, other: _Box) -> bool:
        return (
            self.x < other.x + other.w
            and other.x < self.x + self.w
            and self.y < other.y + other.h
            and (other.y < self.y + self.h)
        )


def all_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows included, and the panels a collapsed row holds."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", []) if panel.get("type") == "row" else []


def _name(panel: dict[str, Any]) -> str:
    return f"panel {panel.get('id')} {panel.get('title', '')!r}"


def problems(dashboards: Sequence[dict[str, Any]], datasource_uid: str = DATASOURCE_UID) -> list[str]:
    """Every problem of every dashboard, one line each, naming the dashboard, panel and target."""
    found: list[str] = []
    uids: dict[str, int] = {}
    for index, dashboard in enumerate(dashboards):
        uid = dashboard.get("uid")
        where = str(uid) if uid else f"dashboards[{index}]"
        if not isinstance(uid, str) or not uid:
            found.append(f"{where}: no uid")
        elif uid in uids:
            found.append(f"{where}: uid also used by dashboards[{uids[uid]}]")
        else:
            uids[uid] = index
        found += [f"{where}: {p}" for p in _dashboard_problems(dashboard, datasource_uid)]
    return found


def _dashboard_problems(dashboard: dict[str, Any], datasource_uid: str) -> list[str]:
    found: list[str] = []
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 1:
        found.append("schemaVersion is not set (Grafana would treat the JSON as the oldest model)")
    if not dashboard.get("title"):
        found.append("no title")
    variables = dashboard.get("templating", {}).get("list", [])
    defined: dict[str, str] = {}
    for i, variable in enumerate(variables):
        name = variable.get("name")
        if not name:
            found.append(f"templating.list[{i}] has no name")
            continue
        if name in defined:
            found.append(f"variable {name!r} is defined twice")
        if variable.get("type") == "query":
            found += [
                f"variable {name!r}: {p}"
                for p in _datasource_problems(variable.get("datasource"), defined, datasource_uid)
            ]
            query = variable.get("definition") or ""
            for ref in variable_references(query):
                if ref not in defined:  # Grafana resolves variables in order: only earlier ones can be used
                    found.append(f"variable {name!r}: its query uses ${ref}, not defined before it")
        defined[name] = variable.get("type", "")
    ids: dict[int, str] = {}
    boxes: list[_Box] = []
    for panel in all_panels(dashboard):
        name = _name(panel)
        panel_id = panel.get("id")
        if not isinstance(panel_id, int):
            found.append(f"{name}: no numeric id")
        elif panel_id in ids:
            found.append(f"{name}: id {panel_id} also used by {ids[panel_id]}")
        else:
            ids[panel_id] = name
        if panel.get("type") not in PANEL_TYPES:
            found.append(f"{name}: unknown type {panel.get('type')!r}")
        box = _grid_box(panel)
        if isinstance(box, str):
            found.append(f"{name}: {box}")
        else:
            found += [f"{name}: overlaps {other.panel}" for other in boxes if box.overlaps(other)]
            boxes.append(box)
        for ref in variable_references(str(panel.get("title", ""))):
            if ref not in defined:
                found.append(f"{name}: title uses ${ref}, which is not a template variable")
        if panel.get("type") == "row":
            continue
        found += [f"{name}: {p}" for p in _datasource_problems(panel.get("datasource"), defined, datasource_uid)]
        found += [f"{name}: {p}" for p in _target_problems(panel, defined, datasource_uid)]
    return found


def _grid_box(panel: dict[str, Any]) -> _Box | str:
    grid = panel.get("gridPos")
    if not isinstance(grid, dict) or not all(isinstance(grid.get(k), int) for k in ("x", "y", "w", "h")):
        return "gridPos needs integer x, y, w and h"
    x, y, w, h = grid["x"], grid["y"], grid["w"], grid["h"]
    if x < 0 or y < 0 or w < 1 or h < 1:
        return f"gridPos {grid} has a negative position or an empty size"
    if x + w > GRID_WIDTH:
        return f"gridPos {grid} ends at column {x + w}, beyond the grid's {GRID_WIDTH}"
    return _Box(_name(panel), x, y, w, h)


def _datasource_problems(ref: Any, defined: dict[str, str], datasource_uid: str) -> list[str]:
    if not isinstance(ref, dict) or ref.get("type") != "prometheus":
        return [f"datasource {ref!r} is not a Prometheus datasource reference"]
    uid = str(ref.get("uid", ""))
    if uid == datasource_uid:
        return []
    names = variable_references(uid)
    if len(names) != 1 or names[0] not in defined:
        return [f"datasource uid {uid!r} is neither the provisioned {datasource_uid!r} nor a defined variable"]
    if defined[names[0]] != "datasource":
        return [f"datasource uid {uid!r} names a {defined[names[0]] or 'untyped'} variable, not a datasource one"]
    return []


def _target_problems(panel: dict[str, Any], defined: dict[str, str], datasource_uid: str) -> list[str]:
    targets = panel.get("targets")
    if not isinstance(targets, list) or not targets:
        return ["no targets"]
    found: list[str] = []
    refs: set[str] = set()
    for i, target in enumerate(targets):
        ref_id = target.get("refId")
        label = f"target {ref_id or i}"
        if not ref_id:
            found.append(f"{label}: no refId")
        elif ref_id in refs:
            found.append(f"{label}: refId repeated")
        refs.add(str(ref_id))
        expr = target.get("expr")
        if not isinstance(expr, str) or not expr.strip():
            found.append(f"{label}: no expr")
            continue
        found += [f"{label}: {p}" for p in _datasource_problems(target.get("datasource"), defined, datasource_uid)]
        unbalanced = bracket_problem(expr)
        if unbalanced:
            found.append(f"{label}: {unbalanced}")
        for ref in variable_references(expr):
            if ref.startswith("__") and ref not in GRAFANA_MACROS:
                found.append(f"{label}: ${ref} is not one of the macros {sorted(GRAFANA_MACROS)}")
            elif not ref.startswith("__") and ref not in defined:
                found.append(f"{label}: ${ref} is not a template variable (defined: {', '.join(defined)})")
    return found


_PAIRS = {")": "(", "]": "[", "}": "{"}


def bracket_problem(expr: str) -> str | None:
    """The first unbalanced bracket outside string literals, as Prometheus' parser would refuse it (tests run the
    real parser against a live Prometheus; this catches the commonest slip offline)."""
    stack: list[tuple[str, int]] = []
    quote: str | None = None
    escaped = False
    for i, char in enumerate(expr):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in "\"'`":
            quote = char
        elif char in "([{":
            stack.append((char, i))
        elif char in _PAIRS:
            if not stack or stack[-1][0] != _PAIRS[char]:
                return f"unbalanced {char!r} at column {i + 1}"
            stack.pop()
    if quote is not None:
        return "unterminated string"
    return f"unclosed {stack[-1][0]!r} at column {stack[-1][1] + 1}" if stack else None
