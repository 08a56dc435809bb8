"""`pulse.broker_health`: the board keeps each cluster's latest verdicts and hands out read-only snapshots."""

from __future__ import annotations

import pytest

from pulse.broker_health import BrokerHealthBoard, BrokerSlowness


def _verdict(broker: int, slow: bool) -> BrokerSlowness:
    return BrokerSlowness(broker, slow, 9.0 if slow else 0.0, "test", 12.0, slow)


def test_unknown_cluster_is_empty() -> None:
    assert dict(BrokerHealthBoard().snapshot("nope")) == {}


def test_publish_replaces_and_copies() -> None:
    board = BrokerHealthBoard()
    brokers = {1: _verdict(1, False), 2: _verdict(2, True)}
    board.publish("dev", brokers)
    brokers.clear()
    snap = board.snapshot("dev")
    assert sorted(snap) == [1, 2] and snap[2].slow
    board.publish("dev", {1: _verdict(1, True)})
    assert sorted(board.snapshot("dev")) == [1]
    assert sorted(snap) == [1, 2], "an earlier snapshot does not change"
    assert board.clusters() == ("dev",)
    with pytest.raises(TypeError):
        snap[3] = _verdict(3, False)  # type: ignore[index]
