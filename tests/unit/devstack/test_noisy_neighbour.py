"""The noisy-neighbour workload's pure parts: every partition of its topics led by the chosen broker, the other
replicas spread, names from one prefix (tests/integration/lag/test_noisy_neighbour.py runs it on the real cluster)."""

from __future__ import annotations

import pytest

from devstack.noisy_neighbour import NoisyPlan, led_by
from pulse.errors import ClusterError


@pytest.mark.parametrize(
    ("broker", "brokers", "want"),
    [
        pytest.param(2, [1, 2, 3], [[2, 1, 3], [2, 3, 1], [2, 1, 3]], id="3 brokers: X first, followers rotate"),
        pytest.param(1, [1], [[1], [1], [1]], id="1 broker: replication 1"),
        pytest.param(3, [4, 3, 2, 1], [[3, 1, 2], [3, 2, 4], [3, 4, 1]], id="4 brokers: replication 3"),
    ],
)
def test_every_partition_is_led_by_the_broker(broker: int, brokers: list[int], want: list[list[int]]) -> None:
    assert led_by(broker, brokers, 3) == want


def test_an_unknown_broker_is_refused_naming_the_cluster_s_brokers() -> None:
    with pytest.raises(ClusterError, match=r"broker 7 is not in the cluster \(brokers \[1, 2, 3\]\)"):
        led_by(7, [3, 1, 2], 3)


def test_names_come_from_the_prefix_and_the_reader_stays_behind() -> None:
    plan = NoisyPlan(broker=2, prefix="nn-x")
    assert (plan.backlog_topic, plan.victim_topic, plan.reader_group) == ("nn-x-backlog", "nn-x-victim", "nn-x-reader")
    assert plan.backlog_bytes == 64 * 1024 * 1024
    assert plan.backlog_bytes / (plan.reader_bytes_per_s * 3) > 60  # a minute or more to read it on 3 brokers
