"""SLO spec validation: one valid SLO broken one key at a time, after Sloth's validation tables.

Each row names the exact line the operator sees; everything here runs without Spark (sqlglot + pyarrow only).
"""

import copy
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pulse.config import parse_config
from slo.model import CalendarWindow, EventsSource, PrometheusSource, RollingWindow
from slo.spec import InvalidSpec, load_slos, parse_slos, read_spec_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def events(tmp_path: Path) -> Path:
    """A one-row SLI event log with the canary's columns."""
    path = tmp_path / "events" / "date=2024-01-01"
    path.mkdir(parents=True)
    table = pa.table(
        {
            "time": pa.array([datetime(2024, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
            "cluster": ["prod"],
            "produce_ok": [True],
            "latency_ms": [3.5],
        }
    )
    pq.write_table(table, path / "part-0.parquet")
    return tmp_path / "events"


def valid(events: Path) -> dict[str, Any]:
    return {
        "name": "produce-availability",
        "source": {"type": "events", "path": str(events), "filter": "cluster = 'prod'"},
        "good": "produce_ok",
        "total": "true",
        "objective": 99.9,
        "window": "30d",
    }


def refused(entries: list[dict[str, Any]]) -> list[str]:
    with pytest.raises(InvalidSpec) as info:
        parse_slos([("pulse.yaml", entries)], None)
    return str(info.value).splitlines()


def test_the_valid_spec_gets_the_workbook_pairs(events: Path) -> None:
    (slo,) = parse_slos([("pulse.yaml", [valid(events)])], None)
    assert slo.objective == Fraction(999, 10)
    assert slo.budget == Fraction(1, 1000)
    assert slo.window == RollingWindow(30 * 86400)
    assert slo.source == EventsSource("events", events, "cluster = 'prod'")
    assert [(p.severity, p.name, p.factor) for p in slo.pairs] == [
        ("page", "1h/5m", Fraction("14.4")),
        ("page", "6h/30m", 6),
        ("ticket", "1d/2h", 3),
        ("ticket", "3d/6h", 1),
    ]
    assert slo.timeslice_target is None


def test_factors_follow_other_windows(events: Path) -> None:
    spec = valid(events) | {"window": "7d", "alerting": {"min_events": 50, "ticket": {"disabled": True}}}
    (slo,) = parse_slos([("p", [spec])], None)
    assert [p.factor for p in slo.pairs] == [Fraction("3.36"), Fraction("1.4")]  # 2 % and 5 % of 7 days
    assert slo.min_events == 50
    spec = valid(events) | {"window": {"calendar": "1M", "timezone": "Europe/Berlin"}}
    (slo,) = parse_slos([("p", [spec])], None)
    assert slo.window == CalendarWindow("1M", "Europe/Berlin", 30 * 86400)
    assert slo.pairs[0].factor == Fraction("14.4")  # a calendar month alerts like 30d


def test_timeslices_and_explicit_factors(events: Path) -> None:
    spec = valid(events) | {
        "budgeting": {"method": "timeslices", "slice_target": 100},
        "good": "latency_ms < 30",
        "alerting": {"page": {"windows": [{"long": "2h", "short": "10m", "factor": 10}]}},
    }
    (slo,) = parse_slos([("p", [spec])], None)
    assert slo.timeslice_target == 1
    assert next((p.severity, p.long_s, p.short_s, p.factor) for p in slo.pairs) == ("page", 7200, 600, Fraction(10))


def _set(tree: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    tree = copy.deepcopy(tree)
    *parents, last = path.split(".")
    node = tree
    for key in parents:
        node = node.setdefault(key, {})
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return tree


_DELETE = object()
PAIR_90 = {"windows": [{"long": "1h", "short": "5m", "budget_percent": 2}]}

CASES = [
    pytest.param(
        "objective", 100, "slos[0].objective: 100 is not a percentage strictly between 0 and 100", id="obj-100"
    ),
    pytest.param("objective", 0, "slos[0].objective: 0 is not a percentage strictly between 0 and 100", id="obj-0"),
    pytest.param("objective", _DELETE, "slos[0].objective: required key is missing", id="obj-missing"),
    pytest.param(
        "good",
        "produce_ok AND",
        "slos[0].good: 'produce_ok AND' is not a Spark SQL expression at column 14: Required keyword: 'expression'"
        " missing",
        id="sql-unparsable",
    ),
    pytest.param("total", "", "slos[0].total: is empty; give a Spark SQL expression", id="sql-empty"),
    pytest.param("good", "sum(produce_ok)", "slos[0].good: 'sum(produce_ok)' aggregates or queries", id="sql-agg"),
    pytest.param("good", "select 1", "slos[0].good: 'select 1' is a statement", id="sql-statement"),
    pytest.param("good", "produce_okk", "slos[0].good: unknown column(s) produce_okk in", id="sql-unknown-col"),
    pytest.param("source.path", "", "slos[0].source.path: is empty; give the directory", id="path-empty"),
    pytest.param("source.path", "/nonexistent/x", "slos[0].source.path: '/nonexistent/x' does not exist", id="path"),
    pytest.param(
        "source.type", "kafka", "slos[0].source.type: Input should be 'events', 'lag' or 'audit'", id="source-type"
    ),
    pytest.param("window", "90m", "slos[0].window: '90m': a rolling window must be a whole number of hours", id="w"),
    pytest.param("window", "1M", "slos[0].window: '1M' is not a duration", id="window-1M-string"),
    pytest.param(
        "window", {"calendar": "1M", "timezone": "Mars/Base"}, "slos[0].window.timezone: 'Mars/Base' is not", id="tz"
    ),
    pytest.param(
        "alerting.page",
        {"windows": [{"long": "5m", "short": "1h", "factor": 2}]},
        "slos[0].alerting.page.windows[0].short: 1h is not shorter than the long window 5m",
        id="short-ge-long",
    ),
    pytest.param(
        "alerting.page",
        {"windows": [{"long": "1h", "short": "5m"}]},
        "slos[0].alerting.page.windows[0]: give exactly one of budget_percent (share of the budget) or factor",
        id="pair-no-threshold",
    ),
    pytest.param(
        "alerting.ticket",
        {"windows": [{"long": "40d", "short": "1d", "factor": 1}]},
        "slos[0].alerting.ticket.windows[0].long: 40d is longer than the SLO window 30d",
        id="long-gt-window",
    ),
    pytest.param(
        "alerting.page",
        {"windows": [{"long": "1h", "short": "5m", "factor": 1000}]},
        "slos[0].alerting.page.windows[0]: burn factor 1000 x error budget 0.001 = 1 >= 1: the error ratio can never "
        "exceed it, so this alert can never fire",
        id="factor-never-fires",
    ),
    pytest.param("alerting.min_events", -1, "slos[0].alerting.min_events: Input should be greater than", id="min-ev"),
    pytest.param("name", "Bad Name", "slos[0].name: 'Bad Name' is not a valid SLO name", id="name"),
    pytest.param(
        "budgeting", {"method": "timeslices", "slice": "5m"}, "slos[0].budgeting.slice: Input should be", id="ts"
    ),
    pytest.param("colour", "red", "slos[0]: unknown key 'colour'", id="unknown-key"),
]


@pytest.mark.parametrize(("path", "value", "message"), CASES)
def test_one_broken_key(events: Path, path: str, value: Any, message: str) -> None:
    lines = refused([_set(valid(events), path, value)])
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"pulse.yaml: {message}"), lines[0]


def test_default_pairs_that_can_never_fire_are_refused(events: Path) -> None:
    # Workbook: at 90 % a 100 % outage burns 1.4 % of the budget per hour, so "2 % in 1 h" can never page.
    lines = refused([valid(events) | {"objective": 90}])
    assert lines == [
        "pulse.yaml: slos[0].alerting.page: default pair 1h/5m: burn factor 14.4 x error budget 0.1 = 1.44 >= 1: "
        "the error ratio can never exceed it, so this alert can never fire; lower the factor or budget_percent, "
        "or raise the objective"
    ]
    assert parse_slos(
        [("p", [valid(events) | {"objective": 90, "alerting": {"page": PAIR_90 | {"disabled": True}}}])], None
    )


def test_every_problem_in_one_pass_and_duplicates(events: Path) -> None:
    lines = refused([valid(events), valid(events) | {"objective": 101}, valid(events) | {"name": "x", "good": ""}])
    assert lines == [
        "pulse.yaml: slos[1].objective: 101 is not a percentage strictly between 0 and 100 (e.g. 99.9)",
        "pulse.yaml: slos[2].good: is empty; give a Spark SQL expression such as `true` or `produce_ok`",
        "pulse.yaml: slos[1].name: duplicate SLO name 'produce-availability' (also slos[0].name)",
    ]


def test_an_empty_source_directory_is_refused(tmp_path: Path, events: Path) -> None:
    (tmp_path / "empty").mkdir()
    lines = refused([valid(events) | {"source": {"type": "lag", "path": str(tmp_path / "empty")}}])
    assert lines == [
        f"pulse.yaml: slos[0].source.path: '{tmp_path / 'empty'}' holds no .parquet files: the source is empty"
    ]


def test_a_streamed_slo_is_checked_against_the_rows_on_kafka_not_parquet_at_its_path(tmp_path: Path) -> None:
    # `slo stream` and `run` with `slo.engine: stream` read the sink's topics: `path` need not exist, but a column
    # the stream's rows do not have is still refused, naming the key.
    streamed = {"events": pa.schema([("time", pa.string()), ("cluster", pa.string()), ("produce_ok", pa.bool_())])}
    entry = {
        "name": "produce",
        "source": {"type": "events", "path": str(tmp_path / "nowhere"), "filter": "cluster = 'prod'"},
        "good": "produce_ok",
        "total": "true",
        "objective": 99.9,
    }
    (slo,) = parse_slos([("pulse.yaml", [entry])], None, streamed=streamed)
    assert isinstance(slo.source, EventsSource) and not slo.source.path.exists()
    with pytest.raises(InvalidSpec) as info:
        parse_slos([("pulse.yaml", [entry | {"good": "consume_ok"}])], None, streamed=streamed)
    assert str(info.value) == (
        "pulse.yaml: slos[0].good: unknown column(s) consume_ok in the events stream's rows "
        "(columns: time, cluster, produce_ok)"
    )
    lines = refused([entry])  # the batch job still needs its Parquet
    assert lines == [f"pulse.yaml: slos[0].source.path: '{tmp_path / 'nowhere'}' does not exist"]


def test_prometheus_source(events: Path) -> None:
    spec = valid(events) | {
        "source": {"type": "prometheus", "url": "http://127.0.0.1:9090/"},
        "good": "sum(increase(ok_total[1m]))",
        "total": "sum(increase(all_total[1m]))",
    }
    (slo,) = parse_slos([("p", [spec])], None)
    assert slo.source == PrometheusSource("http://127.0.0.1:9090", 30.0)
    lines = refused([spec | {"source": {"type": "prometheus", "url": "127.0.0.1:9090"}}])
    assert lines == [
        "pulse.yaml: slos[0].source.url: '127.0.0.1:9090' is not an http(s) URL, e.g. http://127.0.0.1:9090"
    ]


def test_a_config_holding_only_slos_loads_with_relative_paths(events: Path) -> None:
    text = yaml.safe_dump({"slos": [valid(events) | {"source": {"type": "events", "path": "events"}}]})
    config = parse_config(text, "pulse.yaml", {}, base_dir=events.parent)
    (slo,) = load_slos(config, "pulse.yaml", events.parent)
    assert isinstance(slo.source, EventsSource)
    assert slo.source.path == events.parent / "events"
    with pytest.raises(InvalidSpec, match=r"pulse\.yaml: no SLOs"):
        load_slos(parse_config("{}", "pulse.yaml", {}), "pulse.yaml", None)


OPENSLO = """\
apiVersion: openslo/v1
kind: SLI
metadata: {name: produce-ok}
spec:
  ratioMetric:
    counter: true
    good: {metricSource: {type: events, spec: {path: EVENTS, query: produce_ok}}}
    total: {metricSource: {type: events, spec: {path: EVENTS, query: "true"}}}
---
apiVersion: openslo/v1
kind: SLO
metadata: {name: produce-availability}
spec:
  service: kafka
  indicatorRef: produce-ok
  timeWindow: [{duration: 1M, isRolling: false, calendar: {startTime: "2024-01-01 00:00:00", timeZone: Europe/Berlin}}]
  budgetingMethod: Occurrences
  objectives: [{target: 0.999}]
  alertPolicies:
    - kind: AlertPolicy
      metadata: {name: fast}
      spec:
        conditions:
          - kind: AlertCondition
            metadata: {name: fast-burn}
            spec: {severity: page, condition: {kind: burnrate, op: gt, threshold: 14.4, lookbackWindow: 1h}}
"""


def test_openslo_converts_to_the_same_model(tmp_path: Path, events: Path) -> None:
    path = tmp_path / "openslo.yaml"
    path.write_text(OPENSLO.replace("EVENTS", str(events)))
    (slo,) = parse_slos([(str(path), read_spec_file(path))], None)
    assert slo.name == "produce-availability"
    assert slo.labels == {"service": "kafka"}
    assert slo.objective == Fraction(999, 10)
    assert slo.window == CalendarWindow("1M", "Europe/Berlin", 30 * 86400)
    assert slo.good == "produce_ok"
    assert [(p.severity, p.name, p.factor) for p in slo.pairs] == [("page", "1h/5m", Fraction("14.4"))]


def test_openslo_outside_the_subset_is_refused(tmp_path: Path, events: Path) -> None:
    doc = yaml.safe_load(OPENSLO.split("---\n")[1])
    doc["spec"].pop("indicatorRef")
    doc["spec"]["budgetingMethod"] = "RatioTimeslices"
    doc["spec"]["objectives"] = [{"target": 99.9}]
    lines = refused([doc])
    assert lines == [
        "pulse.yaml: slos[0].spec.indicator.spec.ratioMetric: required: only ratioMetric indicators are supported "
        "(thresholdMetric and raw are not)",
        "pulse.yaml: slos[0].spec.budgetingMethod: 'RatioTimeslices': supported are Occurrences and Timeslices",
        "pulse.yaml: slos[0].spec.objectives[0].target: 99.9 is not a ratio strictly between 0 and 1 (e.g. 0.999)",
    ]


@pytest.mark.parametrize("name", ["slo.yaml", "openslo.yaml", "slo-only.yaml"])
def test_examples_parse_without_sources(name: str) -> None:
    path = EXAMPLES / name
    tree = yaml.safe_load(path.read_text()) if name != "openslo.yaml" else None
    entries = read_spec_file(path) if tree is None else tree["slos"]
    assert parse_slos([(name, entries)], path.parent, check_sources=False)


def test_a_spec_file_resolves_its_paths_beside_itself(tmp_path: Path, events: Path) -> None:
    specs = events.parent / "specs"
    specs.mkdir()
    (specs / "slo.yaml").write_text(
        yaml.safe_dump({"slos": [valid(events) | {"source": {"type": "events", "path": "../events"}}]})
    )
    config = parse_config(yaml.safe_dump({"slo": {"spec": "specs/slo.yaml"}}), "pulse.yaml", {}, base_dir=events.parent)
    (slo,) = load_slos(config, "pulse.yaml", tmp_path / "elsewhere")
    assert isinstance(slo.source, EventsSource)
    assert slo.source.path == specs / "../events"
    assert parse_slos([("a.yaml", [valid(events)])], None, base_dirs={"a.yaml": tmp_path})
