"""The cluster-state read's default time limit grows with the partitions of the previous read."""

from __future__ import annotations

import pytest

from collectors.cluster_state import MAX_TIMEOUT_S, read_timeout_s


def test_default_read_timeout_scales_with_partitions() -> None:
    assert read_timeout_s(0) == 10.0  # the limit every cluster had before
    assert read_timeout_s(10_000) == pytest.approx(30.0)  # the bench's cluster needed 11-26 s on a loaded host
    assert read_timeout_s(10_000_000) == MAX_TIMEOUT_S
