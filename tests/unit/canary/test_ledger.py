"""The ledger's periodic log check (canary/ledger.py `log_checked`, tracker rules 2 and 5): offsets acknowledged
before the log was looked at and no longer inside it are gone."""

from datetime import UTC, datetime

from canary.availability import AvailabilityWindow
from canary.events import MemorySink, SinkFanout
from canary.ledger import Ledger
from canary.tracker import Tracker
from canary.view import PartitionLeader

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LEADER = PartitionLeader(1, "az-a", frozenset({1, 2}))


def ledger() -> tuple[Ledger, MemorySink]:
    sink = MemorySink()
    tracker = Tracker("dev", "__pulse_canary", "me", None, loss_deadline_s=30.0)
    return Ledger(tracker, AvailabilityWindow(60.0, 1.0, 2.0), SinkFanout([sink])), sink


def test_log_end_below_an_acknowledged_offset_is_truncation() -> None:
    """Unclean election onto a replica that ends at 101, first reporting a stale end of 100: 101 was read
    (truncated), 102 was not (lost); 103 was acknowledged after the first look, so it is above it by right."""
    book, sink = ledger()
    for sequence, offset in ((0, 100), (1, 101), (2, 102), (3, 103)):
        book.sent(0, sequence, float(sequence), T0, LEADER)
        book.acked(0, sequence, offset, 0.004, float(sequence) + 0.01)
    book.arrived(0, 0, 100, 0.5)
    book.arrived(0, 1, 101, 1.5)
    book.log_checked(0, log_start=0, log_end=100, asked_s=2.5, now=2.6)
    book.log_checked(0, log_start=0, log_end=100, asked_s=3.5, now=3.6)
    assert [(e.sequence, e.lost) for e in sink.events] == [(0, False), (1, False)], "an end that never moved"
    book.log_checked(0, log_start=0, log_end=101, asked_s=4.5, now=4.6)  # recomputed, and still below 101
    assert [(e.sequence, e.lost) for e in sink.events] == [(0, False), (1, False), (2, True)]
    counts = book.counts()[0]
    assert (counts.truncations, counts.truncated) == (1, 1)
    assert book.first_unread_offset(0) == 103


def test_a_new_leaders_lagging_high_watermark_is_not_truncation() -> None:
    """Kafka 4.3 right after an unclean election: the new leader reports end 0 although it holds 0..3; by the next
    check its high watermark has caught up, so nothing was truncated."""
    book, sink = ledger()
    for sequence in range(4):
        book.sent(0, sequence, float(sequence), T0, LEADER)
        book.acked(0, sequence, sequence, 0.004, float(sequence) + 0.01)
        book.arrived(0, sequence, sequence, float(sequence) + 0.02)
    book.log_checked(0, log_start=0, log_end=0, asked_s=5.0, now=5.1)
    book.log_checked(0, log_start=0, log_end=0, asked_s=6.0, now=6.1)  # nothing written: still only a suspicion
    book.sent(0, 4, 6.5, T0, LEADER)
    book.acked(0, 4, 4, 0.004, 6.51)
    book.log_checked(0, log_start=0, log_end=5, asked_s=7.0, now=7.1)  # recomputed: 0..3 were there all along
    assert book.counts()[0].truncations == 0 and not any(e.lost for e in sink.events)


def test_log_start_past_an_unread_acknowledged_offset_is_loss() -> None:
    book, sink = ledger()
    book.sent(0, 0, 0.0, T0, LEADER)
    book.acked(0, 0, 100, 0.004, 0.01)
    book.log_checked(0, log_start=101, log_end=101, asked_s=1.0, now=1.0)
    assert [(e.sequence, e.lost) for e in sink.events] == [(0, True)]
    assert book.counts()[0].truncations == 0


def test_a_log_holding_every_acknowledged_offset_changes_nothing() -> None:
    book, sink = ledger()
    book.sent(0, 0, 0.0, T0, LEADER)
    book.acked(0, 0, 100, 0.004, 0.01)
    book.log_checked(0, log_start=0, log_end=101, asked_s=1.0, now=1.0)
    assert sink.events == [] and book.counts()[0].truncations == 0


def test_verdicts_are_kept_for_ten_minutes_not_until_the_deque_is_full() -> None:
    """A canary of a few partitions took 105 minutes to fill the 20,000 places, which the soak read as growth."""
    from canary.availability import BrokerHealth
    from canary.ledger import VERDICTS_KEPT_S

    book, _ = ledger()
    for second in range(1200):
        now = float(second)
        book.sent(0, second, now, T0, LEADER)
        book.acked(0, second, second, 0.004, now + 0.004)
        book.tick(now + 5.0, BrokerHealth(frozenset(), now + 5.0))
    late = 1205.0
    assert book.availability_between(0.0, late)[1].good <= VERDICTS_KEPT_S + 1
    assert book.availability_between(late - 300.0, late)[1].good >= 290, "the recent ones are all there"
