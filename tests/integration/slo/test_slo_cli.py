"""`kafka-pulse slo evaluate|backtest` in-process against the shared Spark session: the JSON
contract, results to Parquet and to a real Pushgateway, the same JSON with `slo.spark_master` on a standalone cluster;
bad specs and bad sources get clear errors, and an invalid spec never reaches Spark (checked in a fresh interpreter,
where no JVM exists until Spark starts one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devstack.pushgateway import Pushgateway
from devstack.spark_standalone import SparkStandalone
from kafka_pulse.cli.main import cli
from pulse.names import SLO_PUSH_JOB
from tests.fixtures.spark import T, at, iso, minutes, spark_on, stop_spark, write_rows

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config holding only `slos:`: 100 events a minute for 2 days, all bad in [T-20m, T+20m)."""
    root = tmp_path_factory.mktemp("slo-cli")
    count = 2 * 1440 + 120
    good = np.full(count, 100)
    good[2 * 1440 - 20 : 2 * 1440 + 20] = 0
    write_rows(root / "events" / "date=2024-03-30", minutes(at(-2 * 1440), count), ok=good, n=np.full(count, 100))
    spec = {"name": "produce", "source": {"type": "events", "path": "events"}, "good": "ok", "total": "n"}
    path = root / "pulse.yaml"
    path.write_text(yaml.safe_dump({"slos": [spec | {"objective": 99.9, "window": "30d"}]}))
    return path


def test_evaluate_prints_the_contract_and_writes_parquet_and_gauges(
    config: Path, spark: SparkSession, pushgateway: Pushgateway, tmp_path: Path
) -> None:
    args = ["slo", "evaluate", "--config", str(config), "--at", iso(T), "--json", "--results-dir", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, "--pushgateway", pushgateway.http.base_url.__str__()])
    assert result.exit_code == 0, result.output
    (slo,) = json.loads(result.output)["slos"]
    assert {"name", "objective", "sli", "budget_remaining", "burn_rates", "alerts", "exhaustion_at"} <= set(slo)
    assert slo["name"] == "produce" and slo["objective"] == 99.9
    assert list(slo["burn_rates"]) == ["5m", "30m", "1h", "2h", "6h", "1d", "3d"]
    assert slo["burn_rates"]["5m"] == pytest.approx(1000)  # all bad for the last 20 minutes
    assert [(a["severity"], a["firing"]) for a in slo["alerts"]] == [("page", True), ("ticket", True)]
    assert slo["sli"] == pytest.approx(1 - 2000 / (2 * 1440 * 100))
    assert slo["exhaustion_at"] == iso(T)
    (table,) = [pq.read_table(p) for p in tmp_path.glob("evaluation-*.parquet")]
    assert table.column("name").to_pylist() == ["produce"]
    assert table.column("page_firing").to_pylist() == [True]
    metrics = httpx.get(f"{pushgateway.http.base_url}/metrics", timeout=10).text
    try:
        assert (
            f'kafka_pulse_slo_alert_firing{{instance="",job="{SLO_PUSH_JOB}",severity="page",slo="produce"}} 1'
            in metrics
        )
        assert (
            f'kafka_pulse_slo_burn_rate{{instance="",job="{SLO_PUSH_JOB}",slo="produce",window="5m"}} 1000' in metrics
        )
    finally:
        pushgateway.delete(SLO_PUSH_JOB)


def test_backtest_prints_intervals(config: Path, spark: SparkSession) -> None:
    # Bad minutes [T-20m, T+20m): the 1h/5m page fires once 87 bad events exceed 1.44 % of 6,000, i.e. from the
    # first bad minute (100); the 30m window holds a bad minute until T+49m, so the page ends at T+50m.
    args = ["slo", "backtest", "--config", str(config), "--from", iso(at(-60)), "--to", iso(at(120)), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (slo,) = json.loads(result.output)["slos"]
    assert slo["name"] == "produce"
    page = [a for a in slo["alerts"] if a["severity"] == "page"]
    assert page == [{"severity": "page", "start": iso(at(-19)), "end": iso(at(50))}]


def test_the_commands_print_the_same_json_on_a_standalone_cluster(
    config: Path, spark: SparkSession, spark_standalone: SparkStandalone
) -> None:
    # The same config with `slo.spark_master` on the standalone cluster (tests/fixtures/spark.py): the commands
    # build their own session from it, as `kafka-pulse slo` does, so the tests' local session is stopped first.
    evaluate = ["slo", "evaluate", "--at", iso(T), "--json"]
    backtest = ["slo", "backtest", "--from", iso(at(-60)), "--to", iso(at(120)), "--json"]
    local = [CliRunner().invoke(cli, [*args, "--config", str(config)]) for args in (evaluate, backtest)]
    on_cluster = config.with_name("standalone.yaml")
    body = yaml.safe_load(config.read_text()) | {"slo": {"spark_master": spark_standalone.master_url}}
    on_cluster.write_text(yaml.safe_dump(body))
    stop_spark()
    try:
        remote = [CliRunner().invoke(cli, [*args, "--config", str(on_cluster)]) for args in (evaluate, backtest)]
        session = SparkSession.getActiveSession()
        master = None if session is None else session.sparkContext.master
        substitute = None if session is None else session.conf.get("spark.sql.variable.substitute")
        apps = [(a["name"], a["cores"]) for a in spark_standalone.status()["activeapps"]]
    finally:
        stop_spark()
        spark_on("local[2]")  # the rest of the module shares the local session again
    assert [r.exit_code for r in local + remote] == [0, 0, 0, 0], [r.output for r in local + remote]
    assert master == spark_standalone.master_url
    assert substitute == "false"  # slo/session.py's NO_SUBSTITUTION, on a cluster master too
    assert apps == [("kafka-pulse-slo", 2)]  # executors on both one-core workers
    assert [r.output for r in remote] == [r.output for r in local]
    (slo,) = json.loads(remote[1].output)["slos"]
    assert [a["severity"] for a in slo["alerts"]] == ["page", "ticket"]


def test_bad_options_and_specs_exit_2_with_the_key(config: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(config), "--at", "yesterday"])
    assert result.exit_code == 2
    assert "'yesterday' is not an ISO 8601 time" in result.output
    result = CliRunner().invoke(
        cli, ["slo", "backtest", "--config", str(config), "--from", iso(T), "--to", iso(T), "--step", "90s"]
    )
    assert result.exit_code == 2 and "'90s' is not a whole number of minutes" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "slos:\n  - {name: x, source: {type: events, path: missing}, good: ok, total: 'true', objective: 99.9}\n"
    )
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(bad)])
    assert result.exit_code == 2
    assert result.output == f"InvalidSpec: {bad}: slos[0].source.path: '{tmp_path / 'missing'}' does not exist\n"


def test_inconsistent_parquet_files_are_a_clear_error(spark: SparkSession, tmp_path: Path) -> None:
    # Two files disagree on the type of `ok` (boolean vs string): Spark cannot read them as one table.
    write_rows(tmp_path / "mixed", minutes(at(-10), 5), ok=[True] * 5)
    write_rows(tmp_path / "mixed", minutes(at(-5), 5), ok=["yes"] * 5)
    path = tmp_path / "pulse.yaml"
    spec = {"name": "mixed", "source": {"type": "events", "path": "mixed"}, "good": "ok", "total": "true"}
    path.write_text(yaml.safe_dump({"slos": [spec | {"objective": 99}]}))
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(path), "--at", iso(T)])
    assert result.exit_code == 1
    assert result.output.startswith(
        f"SourceUnreadable: Spark could not evaluate the SLOs reading {tmp_path / 'mixed'}:"
    )
    assert "Traceback" not in result.output


def test_an_invalid_spec_never_reaches_spark(tmp_path: Path) -> None:
    # In a fresh interpreter: run the CLI on a spec whose page can never fire, then show no JVM was ever started.
    (tmp_path / "events").mkdir()
    write_rows(tmp_path / "events", minutes(at(-5), 5), ok=[True] * 5)
    spec = {"name": "x", "source": {"type": "events", "path": "events"}, "good": "ok", "total": "true"}
    config = tmp_path / "pulse.yaml"
    config.write_text(yaml.safe_dump({"slos": [spec | {"objective": 90}]}))
    program = textwrap.dedent(
        f"""
        from click.testing import CliRunner
        from kafka_pulse.cli.main import cli
        result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", {str(config)!r}])
        from pyspark import SparkContext
        print(result.exit_code, SparkContext._gateway is None, SparkContext._active_spark_context is None)
        print(result.output)
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, timeout=300)
    first, *rest = done.stdout.splitlines()
    assert first == "2 True True", done.stdout + done.stderr
    assert rest[0].startswith(f"InvalidSpec: {config}: slos[0].alerting.page: default pair 1h/5m: burn factor 14.4")


def test_the_product_session_keeps_variable_references_in_expression_text_as_written() -> None:
    # A fresh interpreter, so that the JVM inherits PULSE_PLANTED: with Spark's default (substitution on) each
    # literal would come back as the variable's value. `extra` asking for substitution must not turn it back on.
    program = textwrap.dedent(
        """
        import json
        from pyspark.sql import functions as F
        from slo.session import spark_session
        spark = spark_session("local[1]", extra={"spark.sql.variable.substitute": "true"})
        texts = ["'${env:PULSE_PLANTED}'", "'${system:java.version}'", "'${spark:spark.app.name}'"]
        row = spark.range(1).select(*[F.expr(text).alias(f"c{i}") for i, text in enumerate(texts)]).first()
        print(json.dumps({"substitute": spark.conf.get("spark.sql.variable.substitute"), "values": list(row)}))
        spark.stop()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PULSE_PLANTED": "PLANTED-value-" + "1"}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer == {
        "substitute": "false",
        "values": ["${env:PULSE_PLANTED}", "${system:java.version}", "${spark:spark.app.name}"],
    }, answer


def test_an_expression_spark_cannot_resolve_names_the_slo(spark: SparkSession, tmp_path: Path) -> None:
    # sqlglot and the allow-list check names and arity; Spark's analyzer checks types, before any data is read.
    write_rows(tmp_path / "events", minutes(at(-5), 5), ok=[True] * 5)
    path = tmp_path / "pulse.yaml"
    good = "array_contains(ok, 1)"  # an allowed function given a boolean where it needs an array
    spec = {"name": "fn", "source": {"type": "events", "path": "events"}, "good": good, "total": "true"}
    path.write_text(yaml.safe_dump({"slos": [spec | {"objective": 99}]}))
    result = CliRunner().invoke(cli, ["slo", "evaluate", "--config", str(path), "--at", iso(T)])
    assert result.exit_code == 1
    # PySpark also logs the analyzer's error (JSON on stderr); our one line comes last.
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("SourceUnreadable: slo 'fn'.good: Spark cannot evaluate 'array_contains(ok, 1)': "), last
    assert "DATATYPE_MISMATCH" in last
