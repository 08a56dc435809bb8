"""The SLO job's Spark driver keeps a bounded status store (slo/session.py): a job that evaluates every minute for
weeks must not hold every job and SQL execution it ever ran (Spark keeps 1,000 of each by default, UI or not)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from pulse.polling import poll
from slo.session import LOCAL_SETTINGS
from tests.fixtures.spark import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the module-scoped fixture


def test_the_driver_forgets_old_jobs_and_sql_executions(spark: SparkSession) -> None:
    retained = int(LOCAL_SETTINGS["spark.ui.retainedJobs"])
    assert int(LOCAL_SETTINGS["spark.sql.ui.retainedExecutions"]) == retained
    for _ in range(retained + 30):
        spark.range(1).collect()  # one SQL execution and one job each
    tracker = spark.sparkContext.statusTracker()
    store = spark._jsparkSession.sharedState().statusStore()

    def held() -> tuple[int, int]:
        return len(tracker.getJobIdsForGroup(None)), int(store.executionsCount())

    # The listener trims asynchronously; with Spark's defaults both would stay at 80 and more.
    poll(held, lambda n: n[0] <= retained and n[1] <= retained, what="a bounded status store", timeout_s=30)
