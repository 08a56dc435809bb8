"""Hostile SLO expressions (slo/sql_allowlist.py through slo/spec.py): Spark SQL can call into the JVM (`reflect`,
`java_method`, `try_reflect`) and any registered UDF, so `good`, `total` and `source.filter` accept only what an SLI
needs. Each row is refused by `slo evaluate` with its key path and the function named, exit 2, no traceback, before
Spark starts (the config points Spark at a master that does not exist, so starting it would fail differently).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kafka_pulse.cli.main import cli
from slo.spec import InvalidSpec, _sql_problems, parse_slos, read_spec_file

EXAMPLES = Path(__file__).parents[3] / "examples"

REFUSED = [
    pytest.param(
        "good",
        "reflect('java.lang.System', 'getenv', 'SECRET') IS NOT NULL",
        "function 'reflect' is not allowed in an SLO expression",
        id="reflect",
    ),
    pytest.param(
        "good",
        "java_method('java.lang.Runtime', 'getRuntime') IS NULL",
        "function 'java_method' is not allowed in an SLO expression",
        id="java_method",
    ),
    pytest.param(
        "total",
        "try_reflect('java.lang.System', 'exit', 1) IS NULL",
        "function 'try_reflect' is not allowed in an SLO expression",
        id="try_reflect",
    ),
    pytest.param(
        "good",
        "`reflect`('java.lang.System', 'getenv', 'X') = ''",
        "function 'reflect' is not allowed in an SLO expression",
        id="quoted-name",
    ),
    pytest.param("good", "my_udf(ok)", "function 'my_udf' is not allowed in an SLO expression", id="udf"),
    pytest.param("good", "db.my_udf(ok)", "function 'my_udf' is not allowed in an SLO expression", id="catalog-udf"),
    pytest.param(
        "filter",
        "cluster IN (SELECT 'prod')",
        repr("cluster IN (SELECT 'prod')") + " aggregates or queries",
        id="subquery",
    ),
    pytest.param("filter", "EXISTS(SELECT 1)", "'EXISTS(SELECT 1)' aggregates or queries", id="exists"),
    pytest.param(
        "good", "transform(tags, t -> reflect('a', 'b'))[0] IS NULL", "lambda functions are not allowed", id="lambda"
    ),
    pytest.param(
        "good",
        "transform(tags, t -> reflect('a', 'b'))[0] IS NULL",
        "function 'reflect' is not allowed",
        id="inside-lambda",
    ),
    pytest.param("good", "rand() < 0.5", "function 'rand' is not allowed in an SLO expression", id="unknown"),
    pytest.param("total", "current_user() = 'root'", "function 'current_user' is not allowed", id="current-user"),
    pytest.param("good", "assert_true(ok)", "function 'assert_true' is not allowed", id="assert_true"),
]


def spec_with(key: str, text: str) -> dict[str, object]:
    source: dict[str, object] = {"type": "events", "path": "events"}
    spec: dict[str, object] = {"name": "probe", "source": source, "objective": 99.9, "good": "ok", "total": "true"}
    if key == "filter":
        source["filter"] = text
    else:
        spec[key] = text
    return spec


@pytest.mark.parametrize(("key", "text", "reason"), REFUSED)
def test_slo_evaluate_refuses_the_expression_before_spark_starts(
    key: str, text: str, reason: str, tmp_path: Path
) -> None:
    path = tmp_path / "pulse.yaml"
    config = {"slo": {"spark_master": "spark://127.0.0.1:1"}, "slos": [spec_with(key, text)]}
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(path)])
    assert result.exit_code == 2, result.output
    at = "source.filter" if key == "filter" else key
    assert result.output.startswith(f"InvalidSpec: {path}: slos[0].{at}: "), result.output
    assert any(f"{path}: slos[0].{at}: {reason}" in line for line in result.output.splitlines()), result.output
    assert "Traceback" not in result.output


ACCEPTED = [
    "ok AND latency_ms < 100",
    "coalesce(lag_seconds, 0) < 30 OR nvl(status, '') = 'OK'",
    "CASE WHEN status = 'OK' THEN 1 WHEN status IS NULL THEN 0 ELSE 0 END",
    "if(isnull(latency_ms), 0, latency_ms) / 1000.0 <= 2.5",
    "nullif(total, 0) IS NOT NULL AND nvl2(error, 0, 1) = 1",
    "CAST(latency_ms AS DOUBLE) * 2 - 1 >= abs(-3) % 2",
    "lower(trim(cluster)) LIKE 'prod%' AND length(topic) > 0 AND substring(topic, 1, 3) <> '__c'",
    "regexp_extract(topic, '^(\\\\w+)', 1) = 'orders' OR topic RLIKE '^pay'",
    "hour(time) BETWEEN 9 AND 17 AND dayofweek(time) IN (2, 3, 4, 5, 6)",
    "date_trunc('HOUR', time) < current_timestamp() AND unix_timestamp(time) > 0",
    "greatest(latency_ms, 0) < least(200, 300) AND round(latency_ms, 1) < 100",
    "nanvl(ratio, 0) < 1 AND lpad(code, 3, '0') = rpad(code, 3, '0') AND element_at(tags, 'az') = 'a'",
    "date_format(time, 'H') = '9' OR timestamp_millis(ts_ms) < current_timestamp() OR size(split(s, ',')) > 1",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_what_an_sli_needs_is_accepted(text: str) -> None:
    assert _sql_problems(text) == []


SLO_EXAMPLES = ["openslo.yaml", "prometheus-slo.yaml", "slo-only.yaml", "slo.yaml"]
"""Every example holding SLOs (production.yaml points `slo.spec` at slo-only.yaml)."""


@pytest.mark.parametrize("example", SLO_EXAMPLES)
def test_every_example_slo_still_passes(example: str) -> None:
    path = EXAMPLES / example
    entries = read_spec_file(path) if example == "openslo.yaml" else yaml.safe_load(path.read_text())["slos"]
    assert parse_slos([(str(path), entries)], path.parent, check_sources=False)


# --- Spark's variable substitution: `${` is refused in every Spark SQL field, before Spark starts ----------------

SUBSTITUTION = (
    "'${' is not allowed in an SLO expression: Spark would replace ${env:VAR}, ${system:prop}, ${spark:key} and "
    "${hiveconf:key} in its text before parsing it"
)
RATIO = "spec.indicator.spec.ratioMetric"


def openslo_with(key: str, text: str) -> dict[str, object]:
    """An OpenSLO SLO whose good query (`query`) or both sources' filter (`filter`) is `text`."""

    def source(query: str) -> dict[str, object]:
        spec = {"path": "events", "query": query} | ({"filter": text} if key == "filter" else {})
        return {"metricSource": {"type": "events", "spec": spec}}

    return {
        "apiVersion": "openslo/v1", "kind": "SLO", "metadata": {"name": "probe"},
        "spec": {
            "budgetingMethod": "Occurrences", "timeWindow": [{"duration": "30d", "isRolling": True}],
            "objectives": [{"target": 0.999}],
            "indicator": {"spec": {"ratioMetric": {"good": source(text if key == "query" else "ok"),
                                                   "total": source("true")}}},
        },
    }  # fmt: skip


SUBSTITUTED = [
    pytest.param(spec_with("good", "length('${env:KAFKA_PASSWORD}') > 0"), ["slos[0].good"], id="good-env"),
    pytest.param(spec_with("total", "ascii(substr('${system:user.home}', 1, 1)) > 0"), ["slos[0].total"],
                 id="total-system"),
    pytest.param(spec_with("filter", "cluster = '${spark:spark.app.name}'"), ["slos[0].source.filter"],
                 id="filter-spark"),
    pytest.param(spec_with("good", "${hiveconf:x} = 1"), ["slos[0].good"], id="good-unquoted-hiveconf"),
    pytest.param(spec_with("good", "ok AND '${X}' = ''"), ["slos[0].good"], id="good-plain-variable"),
    pytest.param(openslo_with("query", "ok AND '${env:KAFKA_PASSWORD}' <> ''"),
                 [f"slos[0].{RATIO}.good.metricSource.spec.query"], id="openslo-query"),
    pytest.param(openslo_with("filter", "'${env:KAFKA_PASSWORD}' <> ''"),
                 [f"slos[0].{RATIO}.good.metricSource.spec.filter", f"slos[0].{RATIO}.total.metricSource.spec.filter"],
                 id="openslo-filter"),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "paths"), SUBSTITUTED)
def test_a_variable_reference_is_refused_with_its_key_path(entry: dict[str, object], paths: list[str]) -> None:
    with pytest.raises(InvalidSpec) as refused:
        parse_slos([("spec.yaml", [entry])], None, check_sources=False)
    assert str(refused.value) == "\n".join(f"spec.yaml: {path}: {SUBSTITUTION}" for path in paths)


def test_every_substitution_is_reported_in_one_pass_with_the_other_problems() -> None:
    first = spec_with("filter", "'${env:A}' = ''") | {"good": "'${env:B}' = ''", "total": "'${env:C}' <> ''"}
    second = spec_with("good", "ok") | {"name": "second", "objective": 150}
    with pytest.raises(InvalidSpec) as refused:
        parse_slos([("spec.yaml", [first, second])], None, check_sources=False)
    assert str(refused.value).splitlines() == [
        f"spec.yaml: slos[0].good: {SUBSTITUTION}",
        f"spec.yaml: slos[0].total: {SUBSTITUTION}",
        f"spec.yaml: slos[0].source.filter: {SUBSTITUTION}",
        "spec.yaml: slos[1].objective: 150 is not a percentage strictly between 0 and 100 (e.g. 99.9)",
    ]


def test_slo_evaluate_refuses_a_substitution_before_spark_starts(tmp_path: Path) -> None:
    # `$${` is the config file's own escape for a literal `${`: what reaches the spec is `${env:KAFKA_PASSWORD}`.
    path = tmp_path / "pulse.yaml"
    entry = spec_with("good", "length('$${env:KAFKA_PASSWORD}') > 0")
    path.write_text(yaml.safe_dump({"slo": {"spark_master": "spark://127.0.0.1:1"}, "slos": [entry]}))
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output == f"InvalidSpec: {path}: slos[0].good: {SUBSTITUTION}\n"
