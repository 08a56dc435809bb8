"""A Prometheus counter-pair source through the Spark job against the real Prometheus.

Constant PromQL (`vector(...)`) needs no history, so the whole path is exercised with no waiting: `query_range`
in chunks below the 11,000-point limit, values shifted to the minute they count, rows into Spark, evaluation.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from devstack.prometheus import Prometheus
from slo import job
from slo.sources import SourceUnreadable
from slo.spec import parse_slos
from tests.fixtures.spark import T

pytestmark = pytest.mark.integration


def test_a_constant_counter_pair_burns_at_ten(prometheus: Prometheus, spark: SparkSession) -> None:
    # 99 good of 100 every minute at 99.9 %: error ratio 1 %, burn rate 10 in every window; 30 days = 43,200
    # minutes, more than one query_range call may return.
    source = {"type": "prometheus", "url": prometheus.url}
    entry = {"name": "prom", "source": source, "good": "vector(99)", "total": "vector(100)", "objective": 99.9}
    (result,) = job.evaluate(spark, parse_slos([("t", [entry])], None), T)
    assert result.total == 30 * 1440 * 100
    assert result.sli == pytest.approx(0.99)
    assert list(result.burn_rates.values()) == [pytest.approx(10.0)] * 7
    # 10x is below the 14.4x page pair and above the 6x one; both ticket pairs (3x, 1x) fire.
    assert [[p.state for p in a.pairs] for a in result.alerts] == [["ok", "firing"], ["firing", "firing"]]


def test_a_query_with_several_series_is_refused_by_name(prometheus: Prometheus, spark: SparkSession) -> None:
    source = {"type": "prometheus", "url": prometheus.url}
    two = 'label_replace(vector(1), "x", "a", "", "") or label_replace(vector(1), "x", "b", "", "")'
    entry = {"name": "prom-two", "source": source, "good": two, "total": "vector(1)", "objective": 99.9}
    with pytest.raises(SourceUnreadable, match=r"slo 'prom-two'\.good: .* returns 2 series; aggregate it"):
        job.evaluate(spark, parse_slos([("t", [entry])], None), T)
