"""The health board: each broker's latest connection check, published as checks complete (canary/health.py)."""

from canary.availability import BrokerHealth
from canary.health import HealthBoard
from pulse.kafka.broker_probe import CheckResult


def test_a_dead_broker_shows_without_waiting_for_a_slow_one() -> None:
    board = HealthBoard()
    for broker in (1, 2, 3):
        board.record(0.0, CheckResult(broker, True, 0.001))
    board.record(0.5, CheckResult(3, False, 0.001, "refused"))  # broker 2's check of 0.5 is still running
    assert board.view() == BrokerHealth(frozenset({3}), as_of=0.0, dead=frozenset({3}))
    board.record(0.5, CheckResult(1, True, 0.002))
    board.record(0.5, CheckResult(2, False, 5.0, "timeout"))
    assert board.view() == BrokerHealth(frozenset({2, 3}), as_of=0.5, dead=frozenset({3}))


def test_a_check_finishing_after_a_newer_one_is_ignored() -> None:
    board = HealthBoard()
    board.record(1.0, CheckResult(1, True, 0.001))
    board.record(0.5, CheckResult(1, False, 5.0, "timeout"))
    assert board.view() == BrokerHealth(frozenset(), as_of=1.0)


def test_no_check_yet_is_an_old_empty_view() -> None:
    assert HealthBoard().view() == BrokerHealth(frozenset(), as_of=-1.0)
