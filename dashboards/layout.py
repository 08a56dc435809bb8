"""The whole dashboard document: the layout pass that stacks rows and wraps their panels on Grafana's 24-column grid,
gives every panel its id and points it at `$datasource`, and the dashboard-level keys around them."""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.grafana import DATASOURCE, Json, Row, datasource_variable

SCHEMA_VERSION = 39
"""Grafana 10.4 / 11.x (Strimzi's dashboards use 39); newer Grafana migrates it on load, older ones do not know
a higher one."""
GRID_WIDTH = 24


def dashboard(
    uid: str,
    title: str,
    description: str,
    variables: Sequence[Json],
    rows: Sequence[Row],
    *,
    tags: Sequence[str] = ("kafka", "kafka-pulse"),
    refresh: str = "30s",
    time_from: str = "now-1h",
) -> Json:
    """The whole dashboard: rows and panels laid out top to bottom, ids from 1, every panel on `$datasource`."""
    panels: list[Json] = []
    y = 0
    next_id = 1
    for row in rows:
        panels.append(
            {
                "type": "row",
                "id": next_id,
                "title": row.title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": y},
                "panels": [],
            }
        )
        next_id += 1
        y += 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > GRID_WIDTH:
                x, y, line_height = 0, y + line_height, 0
            body = {
                "id": next_id,
                **panel.body,
                "datasource": dict(DATASOURCE),
                "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
            }
            panels.append(body)
            next_id += 1
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": list(tags),
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "refresh": refresh,
        "time": {"from": time_from, "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "links": [
            {
                "title": "kafka-pulse dashboards",
                "type": "dashboards",
                "tags": ["kafka-pulse"],
                "asDropdown": True,
                "includeVars": True,
                "keepTime": True,
            }
        ],
        "annotations": {"list": []},
        "templating": {"list": [datasource_variable(), *variables]},
        "panels": panels,
    }
