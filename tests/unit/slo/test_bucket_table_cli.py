"""`slo evaluate|backtest --buckets`: the locations `slo stream --state-dir` takes, refused or missing ones a usage
error before any Spark starts, a local table read without Spark."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from kafka_pulse.cli.main import cli
from slo.bucket_table import BucketTable
from slo.buckets import BUCKET_SCHEMA

AT = datetime(2024, 4, 1, tzinfo=UTC)


def config(tmp_path: Path) -> Path:
    (tmp_path / "events").mkdir()
    rows = pa.table({"time": pa.array([AT], pa.timestamp("us", tz="UTC")), "ok": [True]})
    pq.write_table(rows, tmp_path / "events" / "rows.parquet")  # the spec check wants a source with rows
    source = {"type": "events", "path": str(tmp_path / "events")}
    spec: dict[str, object] = {"name": "probe", "source": source, "objective": 99.9, "good": "ok", "total": "true"}
    path = tmp_path / "pulse.yaml"
    # An unreachable master: a test that reached Spark would fail instead of passing by accident.
    path.write_text(yaml.safe_dump({"slo": {"spark_master": "spark://127.0.0.1:1"}, "slos": [spec]}))
    return path


def buckets(minutes: int) -> pa.Table:
    rows = [
        {"slo": "probe", "instance": "", "minute": datetime.fromtimestamp(AT.timestamp() - 60 * (m + 1), UTC)}
        | {"rows": 1, "good": 99.0, "total": 100.0, "n_bad_value": 0, "n_good_exceeds_total": 0, "batch": 0}
        for m in range(minutes)
    ]
    return pa.Table.from_pylist(rows, schema=BUCKET_SCHEMA)


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("ftp://host/buckets", "ftp:// is not a Hadoop filesystem Spark knows"),
        ("file://host/buckets", "a file:// URL names no host"),
        ("hdfs:///buckets", "hdfs:// needs an authority"),
    ],
)
def test_a_refused_url_is_a_usage_error(location: str, reason: str, tmp_path: Path) -> None:
    for command in (["evaluate"], ["backtest", "--from", "2024-03-31T23:00:00Z", "--to", "2024-04-01T00:00:00Z"]):
        argv = ["slo", *command, "--config", str(config(tmp_path)), "--buckets", location]
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 2, result.output
        assert "--buckets" in result.output and reason in result.output, result.output
        shutil.rmtree(tmp_path / "events")


def test_a_missing_local_table_is_a_usage_error(tmp_path: Path) -> None:
    argv = ["slo", "evaluate", "--config", str(config(tmp_path)), "--buckets", str(tmp_path / "none")]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2 and "no bucket table at" in result.output, result.output


def test_a_local_table_is_read_without_spark(tmp_path: Path) -> None:
    table = tmp_path / "buckets"
    local = BucketTable(str(table))
    local.prepare(None)  # type: ignore[arg-type]  # a local table needs no session
    local.write(None, buckets(30), 0)  # type: ignore[arg-type]
    argv = ["slo", "evaluate", "--config", str(config(tmp_path)), "--at", AT.isoformat(), "--json"]
    result = CliRunner().invoke(cli, [*argv, "--buckets", str(table)])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["slos"]
    assert [(s["name"], s["total"], s["good"]) for s in found] == [("probe", 3000.0, 2970.0)]


def test_a_report_from_a_local_table_needs_no_spark(tmp_path: Path) -> None:
    """`slo report --buckets` reads the table and backtests it in-process: the unreachable master is never asked."""
    table = tmp_path / "buckets"
    local = BucketTable(str(table))
    local.prepare(None)  # type: ignore[arg-type]  # a local table needs no session
    local.write(None, buckets(120), 0)  # type: ignore[arg-type]
    argv = ["slo", "report", "--config", str(config(tmp_path)), "--format", "json", "--buckets", str(table)]
    result = CliRunner().invoke(cli, [*argv, "--from", "2024-03-31T22:00:00Z", "--to", AT.isoformat()])
    assert result.exit_code == 0, result.output
    (found,) = json.loads(result.output)["slos"]
    (period,) = found["periods"]
    assert (period["good"], period["total"]) == (120 * 99.0, 120 * 100.0), period
