"""The small part of Grafana's classic dashboard JSON model kafka-pulse uses, as plain dicts: panel builders and
template variables (the layout pass that gives every panel its id and grid position is dashboards/layout.py).

Plain dicts rather than grafana-foundation-sdk: the SDK is alpha, versioned by Grafana flavour (a bare install picks
the Grafana 10.1 one), and would change the generated JSON on upgrade; the surface used here is a few dozen keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

DATASOURCE_UID = "kafka-pulse-prometheus"
"""The uid provisioning/datasources.yaml gives the Prometheus datasource; the `datasource` variable defaults to it."""
DATASOURCE_VARIABLE = "datasource"
DATASOURCE = {"type": "prometheus", "uid": "${" + DATASOURCE_VARIABLE + "}"}
"""What every panel, target and query variable points at: the dashboard's datasource variable."""
RATE = "[$__rate_interval]"
"""The range of every rate(): Grafana's `$__rate_interval`, at least four scrape intervals whatever the zoom."""

Format = Literal["time_series", "table", "heatmap"]
Json = dict[str, Any]


@dataclass(frozen=True)
class Query:
    """One PromQL target of a panel."""

    expr: str
    legend: str = ""
    """Grafana's legendFormat, e.g. `{{broker}}`."""
    instant: bool = False
    """Evaluate at the end of the range only (tables and stats of current state)."""
    format: Format = "time_series"


@dataclass(frozen=True)
class Panel:
    """A panel before layout: its JSON without `id`, `gridPos` and datasource, and its size in grid units."""

    body: Json
    width: int = 12
    height: int = 8


@dataclass(frozen=True)
class Row:
    """A titled row and the panels under it, laid out left to right and wrapped at 24 columns."""

    title: str
    panels: Sequence[Panel] = field(default_factory=tuple)


def _targets(queries: Sequence[Query]) -> list[Json]:
    targets = []
    for i, q in enumerate(queries):
        target: Json = {
            "datasource": dict(DATASOURCE),
            "expr": q.expr,
            "legendFormat": q.legend,
            "refId": chr(ord("A") + i),
            "format": q.format,
            "instant": q.instant,
            "range": not q.instant,
        }
        targets.append(target)
    return targets


def _field_config(
    unit: str, decimals: int | None, thresholds: Sequence[tuple[float | None, str]], mappings: Sequence[Json]
) -> Json:
    defaults: Json = {
        "unit": unit,
        "thresholds": {
            "mode": "absolute",
            "steps": [{"color": color, "value": value} for value, color in thresholds],
        },
        "mappings": list(mappings),
    }
    if decimals is not None:
        defaults["decimals"] = decimals
    return {"defaults": defaults, "overrides": []}


def _panel(
    kind: str,
    title: str,
    description: str,
    field_config: Json,
    options: Json,
    targets: list[Json],
    size: tuple[int, int],
    *,
    transformations: list[Json] | None = None,
) -> Panel:
    """Every kind's body, keys in one order, so all panels' JSON reads alike; `size` is (width, height)."""
    body: Json = {"type": kind, "title": title, "description": description, "fieldConfig": field_config}
    body["options"] = options
    if transformations is not None:
        body["transformations"] = transformations
    body["targets"] = targets
    return Panel(body, *size)


def _bound(field_config: Json, minimum: float | None, maximum: float | None) -> Json:
    """The axis or gauge range, where one is given: Grafana derives it from the data otherwise."""
    if minimum is not None:
        field_config["defaults"]["min"] = minimum
    if maximum is not None:
        field_config["defaults"]["max"] = maximum
    return field_config


def _last_value() -> Json:
    """The reduction of stats and gauges: the latest non-null value of each series."""
    return {"calcs": ["lastNotNull"], "fields": "", "values": False}


GREEN = ((None, "green"),)
"""Thresholds for figures with no bad value."""


def bad_above(limit: float, color: str = "red") -> tuple[tuple[float | None, str], ...]:
    """Green up to `limit` (exclusive), then `color`: for counts that should be 0."""
    return ((None, "green"), (limit, color))


def good_above(limit: float) -> tuple[tuple[float | None, str], ...]:
    """Red below `limit`, green from it: for ratios that should be high."""
    return ((None, "red"), (limit, "green"))


def value_mappings(texts: Mapping[str, tuple[str, str]]) -> list[Json]:
    """One value mapping: raw value -> (text, colour), e.g. Burrow's status numbers to their names."""
    options = {
        value: {"text": text, "color": color, "index": i} for i, (value, (text, color)) in enumerate(texts.items())
    }
    return [{"type": "value", "options": options}]


def timeseries(
    title: str,
    queries: Sequence[Query],
    *,
    description: str = "",
    unit: str = "short",
    width: int = 12,
    height: int = 8,
    stack: bool = False,
    minimum: float | None = None,
    maximum: float | None = None,
    thresholds: Sequence[tuple[float | None, str]] = GREEN,
    draw: Literal["line", "bars"] = "line",
) -> Panel:
    config = _field_config(unit, None, thresholds, ())
    config["defaults"]["custom"] = {
        "drawStyle": draw,
        "lineWidth": 1,
        "fillOpacity": 10 if not stack else 60,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        "thresholdsStyle": {"mode": "off"},
    }
    config = _bound(config, minimum, maximum)
    options: Json = {
        "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True, "calcs": []},
        "tooltip": {"mode": "multi", "sort": "desc"},
    }
    return _panel("timeseries", title, description, config, options, _targets(queries), (width, height))


def stat(
    title: str,
    queries: Sequence[Query],
    *,
    description: str = "",
    unit: str = "short",
    decimals: int | None = None,
    width: int = 4,
    height: int = 4,
    thresholds: Sequence[tuple[float | None, str]] = GREEN,
    mappings: Sequence[Json] = (),
    text_mode: Literal["auto", "value", "name", "value_and_name"] = "auto",
) -> Panel:
    config = _field_config(unit, decimals, thresholds, mappings)
    options: Json = {
        "reduceOptions": _last_value(),
        "colorMode": "background",
        "graphMode": "none",
        "justifyMode": "auto",
        "orientation": "auto",
        "textMode": text_mode,
    }
    return _panel("stat", title, description, config, options, _instant_targets(queries), (width, height))


def bargauge(
    title: str,
    queries: Sequence[Query],
    *,
    description: str = "",
    unit: str = "short",
    width: int = 12,
    height: int = 8,
    thresholds: Sequence[tuple[float | None, str]] = GREEN,
    minimum: float | None = None,
    maximum: float | None = None,
) -> Panel:
    config = _bound(_field_config(unit, None, thresholds, ()), minimum, maximum)
    options: Json = {
        "reduceOptions": _last_value(),
        "displayMode": "gradient",
        "orientation": "horizontal",
        "showUnfilled": True,
    }
    return _panel("bargauge", title, description, config, options, _instant_targets(queries), (width, height))


def table(
    title: str,
    queries: Sequence[Query],
    *,
    columns: Mapping[str, str],
    description: str = "",
    width: int = 12,
    height: int = 8,
    units: Mapping[str, str] | None = None,
    mappings: Mapping[str, Sequence[Json]] | None = None,
    sort_by: str | None = None,
    descending: bool = True,
) -> Panel:
    """Instant queries merged into one row per label set: aggregate them `by` the labels to show. `columns` orders
    the fields and renames them (`Value #A` -> `Leaders`; a label keeps its name when mapped to itself)."""
    overrides: list[Json] = []
    for name, unit in (units or {}).items():
        overrides.append({"matcher": {"id": "byName", "options": name}, "properties": [{"id": "unit", "value": unit}]})
    for name, maps in (mappings or {}).items():
        overrides.append(
            {
                "matcher": {"id": "byName", "options": name},
                "properties": [
                    {"id": "mappings", "value": list(maps)},
                    {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                ],
            }
        )
    order = {field_name: i for i, field_name in enumerate(columns)}
    config: Json = {"defaults": {"custom": {"align": "auto"}, "mappings": []}, "overrides": overrides}
    options: Json = {
        "showHeader": True,
        "sortBy": [{"displayName": sort_by, "desc": descending}] if sort_by else [],
        "footer": {"show": False, "reducer": ["sum"], "fields": ""},
    }
    transformations: list[Json] = [
        {"id": "merge", "options": {}},
        {
            "id": "organize",
            "options": {"excludeByName": {"Time": True}, "indexByName": order, "renameByName": dict(columns)},
        },
    ]
    targets = _instant_targets(queries, as_table=True)
    return _panel(
        "table",
        title,
        description,
        config,
        options,
        targets,
        (width, height),
        transformations=transformations,
    )


def heatmap(
    title: str,
    query: str,
    *,
    description: str = "",
    unit: str = "s",
    width: int = 12,
    height: int = 8,
) -> Panel:
    """A histogram's buckets over time; `query` gives one series per `le`: `sum by (le) (increase(x_bucket[...]))`."""
    config: Json = {"defaults": {"custom": {"scaleDistribution": {"type": "linear"}}}, "overrides": []}
    options: Json = {
        "calculate": False,
        "cellGap": 1,
        "color": {
            "mode": "scheme",
            "scheme": "Oranges",
            "fill": "dark",
            "scale": "exponential",
            "exponent": 0.5,
            "steps": 64,
            "reverse": False,
        },
        "filterValues": {"le": 1e-9},
        "rowsFrame": {"layout": "auto"},
        "yAxis": {"axisPlacement": "left", "unit": unit, "reverse": False},
        "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": False},
        "legend": {"show": True},
    }
    targets = _targets([Query(query, "{{le}}", format="heatmap")])
    return _panel("heatmap", title, description, config, options, targets, (width, height))


def _instant_targets(queries: Sequence[Query], *, as_table: bool = False) -> list[Json]:
    """Targets evaluated at the range's end only: stats, gauges and tables show current state."""
    return _targets([replace(q, instant=True, format="table" if as_table else q.format) for q in queries])


# --- template variables ------------------------------------------------------------------------------------------


def datasource_variable() -> Json:
    """`$datasource`: any Prometheus, defaulting to the provisioned one, so the JSON also imports elsewhere."""
    return {
        "name": DATASOURCE_VARIABLE,
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {"selected": False, "text": "Prometheus (kafka-pulse)", "value": DATASOURCE_UID},
        "hide": 0,
        "includeAll": False,
        "multi": False,
        "options": [],
        "refresh": 1,
        "regex": "",
        "skipUrlSync": False,
    }


def query_variable(name: str, label: str, query: str, *, multi: bool = False, description: str = "") -> Json:
    """A `label_values(...)` variable, refreshed when the time range changes (clusters and groups come and go).
    A multi-value variable offers All, sent as `.*`, so queries use `=~"$name"`."""
    return {
        "name": name,
        "label": label,
        "description": description,
        "type": "query",
        "datasource": dict(DATASOURCE),
        "definition": query,
        "query": {"query": query, "refId": "StandardVariableQuery"},
        "refresh": 2,
        "regex": "",
        "sort": 3,
        "multi": multi,
        "includeAll": multi,
        "allValue": ".*" if multi else None,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]} if multi else {},
        "options": [],
        "hide": 0,
        "skipUrlSync": False,
    }


def custom_variable(name: str, label: str, values: Sequence[str], default: str, description: str = "") -> Json:
    """A fixed list, e.g. the latency quantile to show."""
    return {
        "name": name,
        "label": label,
        "description": description,
        "type": "custom",
        "query": ",".join(values),
        "current": {"selected": True, "text": default, "value": default},
        "options": [{"selected": v == default, "text": v, "value": v} for v in values],
        "multi": False,
        "includeAll": False,
        "hide": 0,
        "skipUrlSync": False,
    }
