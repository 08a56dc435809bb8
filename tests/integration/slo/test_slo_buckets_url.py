"""`slo evaluate|backtest --buckets` with the bucket table at a URL, as `slo stream --state-dir` keeps it on a
cluster: written through Spark's Parquet writer (one directory per micro-batch), read back through Spark local
mode, and answering as the same table written as local files."""

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kafka_pulse.cli.main import cli
from slo.bucket_table import BucketTable
from slo.buckets import BUCKET_SCHEMA
from tests.unit.slo.test_bucket_table_cli import AT, buckets, config

pytestmark = pytest.mark.integration


def cli_json(*argv: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*argv, "--json"])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.output)
    return found


def test_a_table_at_a_file_url_answers_as_the_same_table_on_disk(spark: SparkSession, tmp_path: Path) -> None:
    path = config(tmp_path)
    body = yaml.safe_load(path.read_text()) | {"slo": {"spark_master": "local[2]"}}  # the fixture's session
    path.write_text(yaml.safe_dump(body))
    first, later = buckets(120), buckets(30)
    later = later.set_column(
        4, BUCKET_SCHEMA.field("good"), pa.array(later["good"].to_numpy() - 50)
    )  # the last 30 minutes again
    later = later.set_column(8, BUCKET_SCHEMA.field("batch"), pa.array(later["batch"].to_numpy() + 1))
    local, url = BucketTable(str(tmp_path / "on-disk")), BucketTable(f"file://{tmp_path / 'at-url'}")
    for table in (local, url):
        table.prepare(spark)
        table.write(spark, first, 0)
        table.write(spark, later, 1)
    assert (tmp_path / "at-url" / "part-000000000001").is_dir()  # Spark's writer, not the local one
    at = ["--config", str(path), "--at", AT.isoformat()]
    on_disk = cli_json("slo", "evaluate", *at, "--buckets", local.location)
    assert cli_json("slo", "evaluate", *at, "--buckets", url.location) == on_disk
    assert on_disk["slos"][0]["good"] == 120 * 99.0 - 30 * 50.0  # the later batch's buckets won
    window = ["--config", str(path), "--from", "2024-03-31T22:00:00Z", "--to", AT.isoformat(), "--step", "5m"]
    backtest = cli_json("slo", "backtest", *window, "--buckets", local.location)
    assert cli_json("slo", "backtest", *window, "--buckets", url.location) == backtest
    assert any(s["alerts"] for s in backtest["slos"])  # the comparison covers a firing alert
    missing = CliRunner().invoke(cli, ["slo", "evaluate", *at, "--buckets", f"file://{tmp_path / 'none'}"])
    assert missing.exit_code == 2 and "no bucket table at file://" in missing.output, missing.output
