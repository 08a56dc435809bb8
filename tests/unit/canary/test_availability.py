"""Per-broker availability and its attribution rules (canary/availability.py rules 1-4).

Partition 0 is led by broker 1, partition 1 by broker 2, partition 2 by broker 3; all in sync on {1, 2, 3}.
SLO 1 s, window 10 s, verdicts deferred at most 2 s for a fresh health view.
"""

import pytest

from canary.availability import Availability, AvailabilityWindow, BrokerHealth, tally
from pulse.kafka.broker_probe import CheckResult

ISR = frozenset({1, 2, 3})
LEADERS = {0: 1, 1: 2, 2: 3}
HEALTHY = BrokerHealth(frozenset(), as_of=0.0)


def window() -> AvailabilityWindow:
    return AvailabilityWindow(window_s=10.0, slo_s=1.0, max_defer_s=2.0)


def send_round(w: AvailabilityWindow, seq: int, now: float) -> None:
    for partition, leader in LEADERS.items():
        w.sent(partition, seq, now, leader, ISR)


def ratios(w: AvailabilityWindow, now: float) -> dict[int, float | None]:
    return {broker: a.ratio for broker, a in w.availability(now).items()}


def test_rule1_acknowledged_in_time_is_good_for_the_leader() -> None:
    w = window()
    send_round(w, 0, 0.0)
    for partition in LEADERS:
        w.acked(partition, 0, 0.004)
    w.judge(0.1, HEALTHY)
    assert ratios(w, 0.1) == {1: 1.0, 2: 1.0, 3: 1.0}


def test_rule2_pending_is_undecided_until_the_slo() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.judge(0.9, BrokerHealth(frozenset(), as_of=0.9))
    assert w.availability(0.9) == {}
    w.judge(1.1, BrokerHealth(frozenset(), as_of=1.05))
    assert w.availability(1.1) == {1: Availability(good=0, bad=1)}


def test_rule2_late_acknowledgement_is_bad() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.acked(0, 0, 1.5)
    w.judge(1.6, BrokerHealth(frozenset(), as_of=1.6))
    assert ratios(w, 1.6) == {1: 0.0}


def test_rule2_leader_down_is_bad_before_the_slo() -> None:
    w = window()
    w.sent(2, 0, 0.0, 3, ISR)
    w.judge(0.3, BrokerHealth(frozenset({3}), as_of=0.25))
    assert ratios(w, 0.3) == {3: 0.0}


def test_rule3_dead_follower_is_charged_not_the_healthy_leaders() -> None:
    """kill -9 broker 3: every partition stalls; only broker 3 loses availability."""
    w = window()
    send_round(w, 0, 0.0)
    for partition in LEADERS:
        w.acked(partition, 0, 0.004)
    send_round(w, 1, 1.0)  # broker 3 dies now; nothing of this round is acknowledged in time
    w.judge(2.1, BrokerHealth(frozenset({3}), as_of=2.05))
    assert w.availability(2.1) == {1: Availability(1, 0), 2: Availability(1, 0), 3: Availability(1, 3)}


def test_rule3_without_a_down_follower_the_leader_is_charged() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.failed(0, 0, 0.5)
    w.judge(0.6, BrokerHealth(frozenset(), as_of=0.55))
    assert ratios(w, 0.6) == {1: 0.0}


def test_rule3_down_broker_out_of_sync_is_not_blamed() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, frozenset({1, 2}))
    w.failed(0, 0, 0.5)
    w.judge(0.6, BrokerHealth(frozenset({3}), as_of=0.55))
    assert ratios(w, 0.6) == {1: 0.0}


def test_rule4_verdict_waits_for_a_health_view_that_saw_the_fault() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.judge(1.2, BrokerHealth(frozenset(), as_of=0.8))  # view older than the moment the probe turned bad
    assert w.availability(1.2) == {}
    w.judge(1.5, BrokerHealth(frozenset({3}), as_of=1.4))
    assert ratios(w, 1.5) == {3: 0.0}


def test_rule4_stale_health_does_not_block_verdicts_forever() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.judge(3.1, BrokerHealth(frozenset(), as_of=0.5))
    assert ratios(w, 3.1) == {1: 0.0}


def test_rule4_verdicts_are_frozen() -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.judge(1.5, BrokerHealth(frozenset({3}), as_of=1.4))
    w.acked(0, 0, 2.0)
    w.judge(2.5, BrokerHealth(frozenset(), as_of=2.4))
    assert ratios(w, 2.5) == {3: 0.0}


def test_window_slides_and_unknown_is_none() -> None:
    w = window()
    w.sent(2, 0, 0.0, 3, ISR)
    w.failed(2, 0, 0.2)
    w.judge(0.3, BrokerHealth(frozenset({3}), as_of=0.3))
    w.sent(2, 1, 5.0, 3, ISR)
    w.acked(2, 1, 0.003)
    w.judge(5.1, HEALTHY)
    assert ratios(w, 5.1) == {3: 0.5}
    w.judge(10.5, HEALTHY)
    assert ratios(w, 10.5) == {3: 1.0}
    w.judge(30.0, HEALTHY)
    assert w.availability(30.0) == {}
    assert Availability(0, 0).ratio is None


def test_no_leader_known_counts_for_nobody() -> None:
    w = window()
    w.sent(0, 0, 0.0, None, frozenset())
    w.failed(0, 0, 0.5)
    w.judge(0.6, BrokerHealth(frozenset(), as_of=0.6))
    assert w.availability(0.6) == {}


@pytest.mark.parametrize("latency_s", [0.001, 1.0])
def test_slo_boundary_is_inclusive(latency_s: float) -> None:
    w = window()
    w.sent(0, 0, 0.0, 1, ISR)
    w.acked(0, 0, latency_s)
    w.judge(1.0, HEALTHY)
    assert ratios(w, 1.0) == {1: 1.0}


def test_rule3b_failure_right_after_leadership_left_a_down_broker_is_that_brokers() -> None:
    """Broker 3 fenced, partition 2 now led by 1, but the producer still routes to 3 for a moment."""
    w = window()
    w.sent(2, 0, 0.0, 1, frozenset({1, 2}), departed=frozenset({3}))
    w.failed(2, 0, 1.0)
    w.judge(1.1, BrokerHealth(frozenset({3}), as_of=1.05))
    assert ratios(w, 1.1) == {3: 0.0}


def test_rule3b_previous_leader_that_is_up_is_not_blamed() -> None:
    w = window()
    w.sent(2, 0, 0.0, 1, frozenset({1, 2, 3}), departed=frozenset({3}))
    w.failed(2, 0, 1.0)
    w.judge(1.1, BrokerHealth(frozenset(), as_of=1.05))
    assert ratios(w, 1.1) == {1: 0.0}


def test_rule3b_failure_right_after_a_down_follower_left_the_isr_is_that_brokers() -> None:
    """kill -9 broker 3, seen on the dev cluster: the ISR of partition 0 has just shrunk to {1, 2}, but the probe
    sent now is still late (the client is reconnecting and bumping its epoch after the stall): broker 3's."""
    w = window()
    w.sent(0, 0, 0.0, 1, frozenset({1, 2}), departed=frozenset({3}))
    w.acked(0, 0, 1.2)
    w.judge(1.3, BrokerHealth(frozenset({3}), as_of=1.25))
    assert w.availability(1.3) == {3: Availability(0, 1)}


def test_rule3_every_down_broker_waited_on_is_charged() -> None:
    """Two followers of a partition down at once: the failure counts against both, never the leader."""
    w = window()
    w.sent(0, 0, 0.0, 1, frozenset({1, 2}), departed=frozenset({3}))
    w.failed(0, 0, 1.0)
    w.judge(1.1, BrokerHealth(frozenset({2, 3}), as_of=1.05))
    assert w.availability(1.1) == {2: Availability(0, 1), 3: Availability(0, 1)}


def test_rule3_healthy_leader_keeps_its_verdicts_through_a_follower_outage() -> None:
    """The kill -9 check (tests/integration/canary/test_canary_faults.py) in miniature: broker 3 dies at t=1, is
    fenced at t=5; partitions 0 and 1 (leaders 1 and 2) stall until then, partition 2 moves to broker 1. Over every
    window, brokers 1 and 2 never drop."""
    w = window()
    leaders = dict(LEADERS)
    for seq in range(20):
        now = seq * 0.5
        fenced = now >= 5.0
        isr = frozenset({1, 2}) if fenced else ISR
        departed = frozenset({3}) if 5.0 <= now < 7.0 else frozenset()
        if fenced:
            leaders[2] = 1
        for partition, leader in leaders.items():
            w.sent(partition, seq, now, leader, isr, departed)
            if now < 1.0 or now >= 5.5:
                w.acked(partition, seq, 0.01)
            elif now == 5.0:
                w.acked(partition, seq, 1.2)  # the client's recovery tail
            else:
                w.failed(partition, seq, now + 1.0)
        w.judge(now + 0.1, BrokerHealth(frozenset({3}) if now >= 1.0 else frozenset(), as_of=now + 0.05))
        got = ratios(w, now + 0.1)
        assert got.get(1) in (None, 1.0) and got.get(2) in (None, 1.0), (now, got)
        if now >= 2.0:
            assert got[3] is not None and got[3] < 1.0


def test_verdicts_are_returned_as_given_and_tally_over_any_span() -> None:
    """The kill -9 test asks for availability over the outage's probes, not the sliding window."""
    w = window()
    send_round(w, 0, 0.0)
    for partition in LEADERS:
        w.acked(partition, 0, 0.004)
    given = w.judge(0.1, HEALTHY)
    assert sorted((v.partition, v.charged, v.good) for v in given) == [
        (0, (1,), True),
        (1, (2,), True),
        (2, (3,), True),
    ]
    send_round(w, 1, 1.0)
    given += w.judge(2.1, BrokerHealth(frozenset({3}), as_of=2.05))
    assert w.judge(2.2, BrokerHealth(frozenset({3}), as_of=2.15)) == []
    assert tally(v for v in given if v.sent_s >= 1.0) == {3: Availability(0, 3)}
    assert tally(given) == w.availability(2.2)


def test_rule3_a_dead_follower_is_charged_before_a_leader_that_missed_a_check() -> None:
    """kill -9 broker 3 on a loaded host: brokers 1 and 2 each time out one check while their writes wait on the
    dead broker 3 (connection refused). The stall is broker 3's."""
    w = window()
    send_round(w, 0, 0.0)
    w.judge(2.1, BrokerHealth(frozenset({1, 2, 3}), as_of=2.05, dead=frozenset({3})))
    assert w.availability(2.1) == {3: Availability(0, 3)}


def test_rule3_a_hung_leader_is_charged_when_nobody_is_dead() -> None:
    w = window()
    w.sent(1, 0, 0.0, 2, ISR)
    w.judge(1.1, BrokerHealth(frozenset({2}), as_of=1.05))
    assert w.availability(1.1) == {2: Availability(0, 1)}


@pytest.mark.parametrize(
    ("error", "dead"),
    [("refused", True), ("ConnectionResetError", True), ("timeout", False), ("tls", False), (None, False)],
)
def test_only_a_refused_or_reset_connection_means_dead(error: str | None, dead: bool) -> None:
    assert CheckResult(3, error is None, 0.5, error).is_dead is dead
