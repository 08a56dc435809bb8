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
    """Unclean election onto a replica that ends at 101: 101 was read (truncated), 102 was not (lost); 103 was
    acknowledged after the watermark was asked for, so it is above it by right."""
    book, sink = ledger()
    for sequence, offset in ((0, 100), (1, 101), (2, 102), (3, 103)):
        book.sent(0, sequence, float(sequence), T0, LEADER)
        book.acked(0, sequence, offset, 0.004, float(sequence) + 0.01)
    book.arrived(0, 0, 100, 0.5)
    book.arrived(0, 1, 101, 1.5)
    book.log_checked(0, log_start=0, log_end=101, asked_s=2.5, now=3.5)
    assert [(e.sequence, e.lost) for e in sink.events] == [(0, False), (1, False), (2, True)]
    counts = book.counts()[0]
    assert (counts.truncations, counts.truncated) == (1, 1)
    assert book.first_unread_offset(0) == 103


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
