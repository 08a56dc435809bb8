"""Structural checks of dashboard JSON (dashboards/lint.py): the generated dashboards pass, and each way of breaking
a valid dashboard is named exactly (Sloth's validation-table style: one valid object, one field broken per row)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from dashboards.files import all_dashboards
from dashboards.grafana import DATASOURCE, Query, Row, query_variable, stat, timeseries
from dashboards.layout import dashboard
from dashboards.lint import bracket_problem, problems, variable_references


def test_the_generated_dashboards_have_no_problems() -> None:
    built = all_dashboards()  # raises DashboardInvalid listing every problem
    assert problems(list(built.values())) == []
    assert len({d["uid"] for d in built.values()}) == len(built) == 5


def valid() -> dict[str, Any]:
    return dashboard(
        "d1",
        "D1",
        "",
        [query_variable("cluster", "Cluster", "label_values(up, cluster)")],
        [
            Row(
                "r",
                [stat("s", [Query('up{cluster="$cluster"}')]), timeseries("t", [Query("rate(x[$__rate_interval])")])],
            )
        ],
    )


def test_the_valid_example_is_valid() -> None:
    assert problems([valid()]) == []


def _panel(d: dict[str, Any], i: int) -> dict[str, Any]:
    panel: dict[str, Any] = d["panels"][i]
    return panel


Break = Callable[[dict[str, Any]], None]
"""Breaks the valid dashboard in place."""


def _expr(i: int, expr: str) -> Break:
    """Sets the query of the first target of panel `i` (0 is the row, 1 the stat, 2 the time series)."""
    return lambda d: _panel(d, i)["targets"][0].update(expr=expr)


CASES: list[Any] = [
    pytest.param(
        lambda d: d.pop("schemaVersion"),
        ["d1: schemaVersion is not set (Grafana would treat the JSON as the oldest model)"],
        id="no-schema-version",
    ),
    pytest.param(
        lambda d: _panel(d, 2).update(id=2), ["d1: panel 2 't': id 2 also used by panel 2 's'"], id="duplicate-panel-id"
    ),
    pytest.param(
        lambda d: _panel(d, 2)["gridPos"].update(x=0), ["d1: panel 3 't': overlaps panel 2 's'"], id="overlap"
    ),
    pytest.param(
        lambda d: _panel(d, 2)["gridPos"].update(w=21),
        ["d1: panel 3 't': gridPos {'h': 8, 'w': 21, 'x': 4, 'y': 1} ends at column 25, beyond the grid's 24"],
        id="beyond-the-grid",
    ),
    pytest.param(
        _expr(1, 'up{cluster="$clustr"}'),
        ["d1: panel 2 's': target A: $clustr is not a template variable (defined: datasource, cluster)"],
        id="undefined-variable",
    ),
    pytest.param(
        _expr(2, "rate(x[$__rate])"),
        ["d1: panel 3 't': target A: $__rate is not one of the macros ['__interval', '__range', '__rate_interval']"],
        id="unknown-macro",
    ),
    pytest.param(
        lambda d: _panel(d, 1).update(datasource={"type": "prometheus", "uid": "other"}),
        [
            "d1: panel 2 's': datasource uid 'other' is neither the provisioned 'kafka-pulse-prometheus' nor a "
            "defined variable"
        ],
        id="foreign-datasource",
    ),
    pytest.param(
        lambda d: _panel(d, 1)["targets"][0].update(datasource={"type": "prometheus", "uid": "${cluster}"}),
        ["d1: panel 2 's': target A: datasource uid '${cluster}' names a query variable, not a datasource one"],
        id="datasource-from-query-variable",
    ),
    pytest.param(
        lambda d: _panel(d, 1).update(datasource="Prometheus"),
        ["d1: panel 2 's': datasource 'Prometheus' is not a Prometheus datasource reference"],
        id="legacy-string-datasource",
    ),
    pytest.param(
        _expr(1, 'max(up{cluster="$cluster"}})'),
        ["d1: panel 2 's': target A: unbalanced '}' at column 27"],
        id="stray-brace",
    ),
    pytest.param(
        _expr(2, "sum(rate(x[$__rate_interval])"),
        ["d1: panel 3 't': target A: unclosed '(' at column 4"],
        id="unclosed-paren",
    ),
    pytest.param(
        lambda d: _panel(d, 1)["targets"].append(dict(_panel(d, 1)["targets"][0])),
        ["d1: panel 2 's': target A: refId repeated"],
        id="duplicate-ref-id",
    ),
    pytest.param(lambda d: _panel(d, 1).update(targets=[]), ["d1: panel 2 's': no targets"], id="no-targets"),
    pytest.param(
        lambda d: d["templating"]["list"].insert(
            1, query_variable("broker", "B", 'label_values(x{cluster="$cluster"}, broker)')
        ),
        ["d1: variable 'broker': its query uses $cluster, not defined before it"],
        id="variable-order",
    ),
    pytest.param(
        lambda d: _panel(d, 1).update(title="p$quantile"),
        ["d1: panel 2 'p$quantile': title uses $quantile, which is not a template variable"],
        id="title-variable",
    ),
]


@pytest.mark.parametrize(("breaks", "want"), CASES)
def test_each_break_is_named(breaks: Break, want: list[str]) -> None:
    broken = copy.deepcopy(valid())
    breaks(broken)
    assert problems([broken]) == want


def test_uids_must_be_unique_across_dashboards() -> None:
    assert problems([valid(), valid()]) == ["d1: uid also used by dashboards[0]"]


def test_variable_references_know_every_spelling_and_skip_regex_groups() -> None:
    text = 'label_replace(x{a="$a", b=~"${b:regex}"}, "c", "$1", "d", "(.*)") [[e]] ${f.text} $__rate_interval'
    assert variable_references(text) == ["a", "b", "e", "f", "__rate_interval"]


def test_every_panel_and_target_uses_the_datasource_variable() -> None:
    for d in all_dashboards().values():
        for panel in d["panels"]:
            if panel["type"] != "row":
                assert panel["datasource"] == DATASOURCE
                assert all(t["datasource"] == DATASOURCE for t in panel["targets"])


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('x{a="}"}', None),
        ('x{a="\\"}"}', None),
        ('label_replace(x, "w", "$1", "n", "r(.+)")', None),
        ("sum(rate(x[5m])", "unclosed '(' at column 4"),
        ("x]", "unbalanced ']' at column 2"),
        ('x{a="b}', "unterminated string"),
    ],
)
def test_brackets_are_checked_outside_strings(expr: str, want: str | None) -> None:
    assert bracket_problem(expr) == want
