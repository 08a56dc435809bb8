"""Tracker rules: loss, duplicates, order and truncation, from scripted probe histories.

Each row is a script of steps on partition 0 and the settled rows it must produce, with the rule it exercises.
Times are monotonic seconds; the loss deadline is 10 s.
"""

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from canary.events import ProbeResult
from canary.tracker import SLO_EXCEEDED, Tracker

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DEADLINE_S = 10.0

Step = tuple[str, *tuple[float, ...]]
"""A step's kind, then its numbers (sequences and offsets are ints, times floats)."""


def tracker() -> Tracker:
    return Tracker("dev", "__pulse_canary", "me", "az-a", loss_deadline_s=DEADLINE_S)


def run(steps: list[Step], t: Tracker | None = None) -> tuple[Tracker, list[ProbeResult]]:
    """Steps: ("send", seq, now), ("ack", seq, offset, now), ("fail", seq, now), ("read", seq, offset, now),
    ("expire", now), ("deleted", log_start, now), ("truncated", hw, now)."""
    t = t or tracker()
    out: list[ProbeResult] = []
    for step in steps:
        kind, *args = step
        a = [float(x) if isinstance(x, float) else x for x in args]
        if kind == "send":
            t.sent(0, int(a[0]), float(a[1]), T0, broker=1, rack="az-a")
        elif kind == "ack":
            out += t.acked(0, int(a[0]), int(a[1]), latency_s=0.005, now=float(a[2]))
        elif kind == "fail":
            out += t.failed(0, int(a[0]), "_MSG_TIMED_OUT", float(a[1]))
        elif kind == "read":
            out += t.arrived(0, int(a[0]), int(a[1]), float(a[2]))
        elif kind == "expire":
            out += t.expire(float(a[0]))
        elif kind == "deleted":
            out += t.offsets_deleted(0, int(a[0]), float(a[1]))
        elif kind == "truncated":
            out += t.truncated(0, int(a[0]), float(a[1]))
        else:
            raise AssertionError(kind)
    return t, out


def flags(r: ProbeResult) -> str:
    """A compact spelling of one row: seq:produce/consume[:lost][:dup][:ooo]."""
    parts = [
        str(r.sequence),
        "ok" if r.produce_ok else "fail",
        {True: "read", False: "unread", None: "-"}[r.consume_ok],
    ]
    parts += [name for name, on in (("lost", r.lost), ("dup", r.duplicate), ("ooo", r.out_of_order)) if on]
    return ":".join(parts)


@dataclass(frozen=True)
class Case:
    steps: list[Step]
    want: list[str]


# Histories the rows start from (partition 0; probe N is sequence N).
ACKED_0: list[Step] = [("send", 0, 0.0), ("ack", 0, 100, 0.01)]
"""Probe 0 sent and acknowledged at offset 100, not read yet."""
READ_0: list[Step] = [("send", 0, 0.0), ("ack", 0, 100, 0.0), ("read", 0, 100, 0.1)]
"""Probe 0 acknowledged at offset 100 and read back."""
READ_0_ACKED_1: list[Step] = [*READ_0, ("send", 1, 1.0), ("ack", 1, 101, 1.0)]
"""Then probe 1 acknowledged at offset 101, not read yet."""
BOTH_ACKED: list[Step] = [("send", 0, 0.0), ("send", 1, 1.0), ("ack", 0, 100, 1.0), ("ack", 1, 101, 1.0)]
"""Probes 0 and 1 acknowledged at offsets 100 and 101, neither read yet."""

CASES = [
    pytest.param(Case([*ACKED_0, ("read", 0, 100, 0.02)], ["0:ok:read"]), id="rule1-acked-then-read"),
    pytest.param(
        Case([("send", 0, 0.0), ("read", 0, 100, 0.01), ("ack", 0, 100, 0.02)], ["0:ok:read"]),
        id="rule1-read-before-its-delivery-report",
    ),
    pytest.param(Case([("send", 0, 0.0), ("fail", 0, 2.0)], ["0:fail:-"]), id="rule1-produce-failed"),
    pytest.param(Case([*ACKED_0, ("expire", 9.9)], []), id="rule2-not-yet-lost"),
    pytest.param(Case([*ACKED_0, ("expire", 10.1)], ["0:ok:unread:lost"]), id="rule2-lost-after-deadline"),
    pytest.param(Case([("send", 0, 0.0), ("expire", 30.0)], []), id="rule2-unacknowledged-is-never-lost-only-failed"),
    pytest.param(
        Case([("send", 0, 0.0), ("fail", 0, 2.0), ("expire", 30.0)], ["0:fail:-"]),
        id="rule2-failed-produce-is-not-lost",
    ),
    pytest.param(
        Case([*ACKED_0, ("expire", 10.1), ("read", 0, 100, 11.0)], ["0:ok:unread:lost"]),
        id="rule2-late-arrival-stays-lost",
    ),
    pytest.param(
        Case([("send", 0, 0.0), ("ack", 0, 100, 8.0), ("expire", 12.0), ("read", 0, 100, 12.5)], ["0:ok:read"]),
        id="rule2-deadline-counts-from-the-acknowledgement",
    ),
    pytest.param(
        Case(
            [
                ("send", 0, 0.0),
                ("ack", 0, 100, 0.0),
                ("send", 1, 1.0),
                ("ack", 1, 101, 1.0),
                ("deleted", 101, 1.5),
                ("read", 1, 101, 1.6),
            ],
            ["0:ok:unread:lost", "1:ok:read"],
        ),
        id="rule2-deleted-before-read",
    ),
    pytest.param(
        Case([*ACKED_0, ("read", 0, 100, 0.02), ("read", 0, 100, 0.03)], ["0:ok:read", "0:ok:read:dup"]),
        id="rule3-same-record-read-twice",
    ),
    pytest.param(
        Case(
            [*ACKED_0, ("read", 0, 100, 0.02), ("read", 0, 105, 0.5), ("read", 0, 106, 0.6)],
            ["0:ok:read", "0:ok:read:dup", "0:ok:read:dup"],
        ),
        id="rule3-resent-copies-at-new-offsets",
    ),
    pytest.param(
        Case(
            [("send", 0, 0.0), ("read", 0, 100, 0.01), ("read", 0, 101, 0.02), ("ack", 0, 100, 0.03)],
            ["0:ok:read:dup", "0:ok:read"],
        ),
        id="rule3-duplicate-before-delivery-report",
    ),
    pytest.param(
        Case([*BOTH_ACKED, ("read", 1, 101, 1.1), ("read", 0, 102, 1.2)], ["1:ok:read", "0:ok:read:ooo"]),
        id="rule4-lower-sequence-after-higher",
    ),
    pytest.param(
        Case([*BOTH_ACKED, ("read", 0, 100, 1.1), ("read", 1, 101, 1.2)], ["0:ok:read", "1:ok:read"]),
        id="rule4-in-order-is-not-flagged",
    ),
    pytest.param(
        Case([*READ_0_ACKED_1, ("truncated", 100, 1.5)], ["0:ok:read", "1:ok:unread:lost"]),
        id="rule5-truncation-loses-the-unread",
    ),
    pytest.param(
        Case(
            [*READ_0_ACKED_1, ("send", 2, 2.0), ("ack", 2, 100, 2.0), ("read", 2, 100, 2.1)],
            ["0:ok:read", "1:ok:unread:lost", "2:ok:read"],
        ),
        id="rule5-offset-acknowledged-again",
    ),
    pytest.param(
        Case(
            [
                *READ_0_ACKED_1,
                ("truncated", 100, 1.5),
                ("truncated", 100, 2.5),
                ("send", 2, 3.0),
                ("ack", 2, 100, 3.0),
                ("read", 2, 100, 3.1),
            ],
            ["0:ok:read", "1:ok:unread:lost", "2:ok:read"],
        ),
        id="rule5-truncation-seen-twice-counts-once",
    ),
    pytest.param(
        Case(
            [*READ_0_ACKED_1, ("send", 2, 2.0), ("read", 2, 100, 2.1), ("ack", 2, 100, 2.2)],
            ["0:ok:read", "1:ok:unread:lost", "2:ok:read"],
        ),
        id="rule5-offset-read-again-before-its-delivery-report",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_rules(case: Case) -> None:
    _, results = run(case.steps)
    assert [flags(r) for r in results] == case.want


def test_truncation_counts_records_already_read() -> None:
    t, _ = run([*READ_0, ("truncated", 50, 1.0)])
    counts = t.counts()[0]
    assert (counts.truncations, counts.truncated) == (1, 1)


def test_truncation_seen_again_is_not_counted_again() -> None:
    t, _ = run([*READ_0, ("truncated", 50, 1.0)])
    run([("truncated", 50, 2.0)], t)
    assert (t.counts()[0].truncations, t.counts()[0].truncated) == (1, 1)


def test_truncation_below_nothing_acked_is_no_truncation() -> None:
    t, results = run([("send", 0, 0.0), ("ack", 0, 100, 0.0), ("truncated", 101, 1.0)])
    assert results == [] and t.counts()[0].truncations == 0


def test_read_after_a_failed_produce_is_counted_as_persisted() -> None:
    t, results = run([("send", 0, 0.0), ("fail", 0, 2.0), ("read", 0, 100, 2.5)])
    assert [flags(r) for r in results] == ["0:fail:-"]
    assert t.counts()[0].persisted_after_error == 1


def test_failure_reported_after_the_record_was_read() -> None:
    # The request reached the log but the client timed out: the row says read, with the error kept.
    t, results = run([("send", 0, 0.0), ("read", 0, 100, 0.5), ("fail", 0, 2.0)])
    assert [flags(r) for r in results] == ["0:fail:read"] and results[0].error == "_MSG_TIMED_OUT"
    assert t.counts()[0].persisted_after_error == 1


def test_late_arrival_is_counted() -> None:
    t, _ = run([("send", 0, 0.0), ("ack", 0, 100, 0.0), ("expire", 11.0), ("read", 0, 100, 12.0)])
    assert t.counts()[0].late == 1


def test_unknown_sequences_are_counted_not_settled() -> None:
    t, results = run([("read", 7, 100, 0.0)])
    assert results == [] and t.counts()[0].unknown == 1


def test_settled_probes_are_forgotten_after_the_retention() -> None:
    t, _ = run([*READ_0, ("expire", 25.0)])
    assert t.pending() == 0
    _, again = run([("read", 0, 100, 26.0)], t)
    assert again == [] and t.counts()[0].unknown == 1


def test_result_fields() -> None:
    _, results = run([("send", 3, 0.0), ("ack", 3, 42, 0.005), ("read", 3, 42, 0.012)])
    (r,) = results
    assert (r.cluster, r.topic, r.partition, r.broker, r.rack, r.client_rack, r.producer_id) == (
        "dev",
        "__pulse_canary",
        0,
        1,
        "az-a",
        "az-a",
        "me",
    )
    assert (r.sequence, r.offset, r.time) == (3, 42, T0)
    assert r.produce_latency_s == pytest.approx(0.005)
    assert r.e2e_latency_s == pytest.approx(0.012)


def test_max_acked_offset() -> None:
    t, _ = run([("send", 0, 0.0), ("ack", 0, 100, 0.0), ("send", 1, 0.0), ("fail", 1, 1.0)])
    assert t.max_acked_offset(0) == 100
    assert t.max_acked_offset(1) is None


def test_rule1b_acknowledged_after_the_slo_is_not_produce_ok() -> None:
    """The client may keep trying past the SLO (delivery_timeout_s); the probe is read, but it was not ok."""
    t = Tracker("dev", "__pulse_canary", "me", "az-a", loss_deadline_s=DEADLINE_S, latency_slo_s=1.0)
    t.sent(0, 0, 0.0, T0, broker=1, rack="az-a")
    t.sent(0, 1, 0.5, T0, broker=1, rack="az-a")
    assert t.acked(0, 0, 100, latency_s=3.2, now=3.2) == []
    assert t.acked(0, 1, 101, latency_s=1.0, now=1.5) == []
    late, in_time = t.arrived(0, 0, 100, 3.3) + t.arrived(0, 1, 101, 3.3)
    assert (late.produce_ok, late.error, late.produce_latency_s, late.consume_ok) == (False, SLO_EXCEEDED, 3.2, True)
    assert (in_time.produce_ok, in_time.error) == (True, None)


def test_truncation_counts_only_offsets_acknowledged_before_the_log_was_read() -> None:
    """The log check asked for the watermark at t=1.0; a probe acknowledged at t=1.2 is above it by right."""
    t, _ = run([("send", 0, 0.0), ("ack", 0, 100, 0.5), ("read", 0, 100, 0.6), ("send", 1, 1.0), ("ack", 1, 101, 1.2)])
    assert t.acked_offsets(0, acked_before=1.0) == (100, 100)
    assert t.truncated(0, 101, 1.3, acked_before=1.0) == []
    assert t.counts()[0].truncations == 0
    assert t.acked_offsets(0, acked_before=2.0) == (100, 101)


def test_first_unread_offset_is_where_a_reader_off_a_truncated_log_goes_on() -> None:
    t, _ = run(READ_0_ACKED_1)
    assert t.first_unread_offset(0) == 101
    run([("send", 2, 2.0), ("ack", 2, 102, 2.0), ("read", 1, 101, 2.1)], t)
    assert t.first_unread_offset(0) == 102
    assert tracker().first_unread_offset(0) is None


def test_acknowledged_without_an_offset_takes_the_offset_it_is_read_at() -> None:
    """librdkafka reports offset -1 for a retry the broker found already written: that is no truncation."""
    t, results = run(
        [("send", 0, 0.0), ("ack", 0, 100, 0.1), ("send", 1, 1.0), ("ack", 1, -1, 1.1), ("read", 0, 100, 1.2)]
    )
    assert [flags(r) for r in results] == ["0:ok:read"]
    _, results = run([("read", 1, 101, 1.3)], t)
    assert [(r.sequence, r.offset, r.lost) for r in results] == [(1, 101, False)]
    assert t.counts()[0].truncations == 0
