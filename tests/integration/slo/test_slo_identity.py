"""SLO identity through Spark local mode: a `group_by` value holding the instance key's separator (or a backslash)
is its own instance with its own labels, never another's, in an evaluation, a backtest and the report's series."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import SparkSession

from slo import job
from slo.sources import INSTANCE_SEPARATOR
from slo.spec import parse_slos
from tests.fixtures.spark import T, at, minutes, spark, write_rows

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the module-scoped fixture
SEP = INSTANCE_SEPARATOR
GROUPS = [("payments", "eu"), (f"payments{SEP}x", "eu"), ("payments", f"eu{SEP}x"), ("pay\\", "ments")]


def test_every_group_keeps_its_own_labels_through_spark(spark: SparkSession, tmp_path: Path) -> None:
    count = 30
    times = minutes(at(-count), count)
    for i, (group, zone) in enumerate(GROUPS):
        write_rows(tmp_path / "events", times, group=[group] * count, zone=[zone] * count, ok=np.full(count, i))
    one = {"name": "one", "source": {"type": "events", "path": str(tmp_path / "events")}, "good": "ok > 0",
           "total": "1", "objective": 99.0, "group_by": ["group"]}  # fmt: skip
    two = one | {"name": "two", "group_by": ["group", "zone"]}
    slos = parse_slos([("identity", [one, two])], None)

    results = job.evaluate(spark, slos, T)
    by_slo = {name: [r.labels for r in results if r.name == name] for name in ("one", "two")}
    assert sorted(d["group"] for d in by_slo["one"]) == sorted({g for g, _ in GROUPS})
    assert sorted((d["group"], d["zone"]) for d in by_slo["two"]) == sorted(GROUPS)
    assert all(r.repeated_label_sets == 0 for r in results)
    good = {(r.labels["group"], r.labels["zone"]): r.good for r in results if r.name == "two"}
    assert good[("payments", "eu")] == 0 and good[(f"payments{SEP}x", "eu")] == count  # nobody else's events

    series = job.minute_series(spark, slos[1:], at(-count), T)
    assert sorted((s.labels["group"], s.labels["zone"]) for s in series) == sorted(GROUPS)
    backtest = job.backtest(spark, slos[1:], at(-10), T, timedelta(minutes=1))
    assert sorted((b.labels["group"], b.labels["zone"]) for b in backtest) == sorted(GROUPS)
