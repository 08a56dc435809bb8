"""The cluster-state read's default time limit grows with the partitions of the previous read; how long it waits on
its kept client before a fresh one reads, and in which order DescribeQuorum asks the brokers (pure)."""

from __future__ import annotations

import pytest

from collectors.cluster_quorum import quorum_order
from collectors.cluster_state import ATTEMPT_S, MAX_TIMEOUT_S, read_attempt_s, read_timeout_s


def test_default_read_timeout_scales_with_partitions() -> None:
    assert read_timeout_s(0) == 10.0  # the limit every cluster had before
    assert read_timeout_s(10_000) == pytest.approx(30.0)  # the bench's cluster needed 11-26 s on a loaded host
    assert read_timeout_s(10_000_000) == MAX_TIMEOUT_S


def test_a_read_waits_on_the_kept_client_three_times_its_last_good_read() -> None:
    """A small cluster's read is cut at the 2 s floor, a large one's at 3x its usual time, never past half its
    limit; before any good read, half the limit; under 4 s, never."""
    assert read_attempt_s(None, 0, 0.01) == ATTEMPT_S
    assert read_attempt_s(None, 10_000, 4.0) == pytest.approx(12.0)
    assert read_attempt_s(None, 10_000, 20.0) == pytest.approx(15.0)  # half of 30 s
    assert read_attempt_s(8.0, 10_000, 20.0) == pytest.approx(4.0)  # a configured limit wins over the default
    assert read_attempt_s(None, 0, None) == pytest.approx(5.0)
    assert read_attempt_s(3.0, 0, 0.01) is None  # too short for two tries: the kept client has it all


def test_describe_quorum_asks_brokers_that_did_not_answer_last() -> None:
    addresses = {3: ("h3", 9094), 1: ("h1", 9092), 2: ("h2", 9093)}
    assert [n for n, _ in quorum_order(addresses, set())] == [1, 2, 3]
    assert quorum_order(addresses, {1, 7}) == [(2, ("h2:9093",)), (3, ("h3:9094",)), (1, ("h1:9092",))]
