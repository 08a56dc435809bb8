"""pulse/sli_sink/sink.py's ordering, spooling and counting, with a scripted `Delivery` in place of Kafka (the real
cluster is tests/integration/pulse/test_sli_sink.py's)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest

from pulse.polling import poll
from pulse.sli_sink import Outcome, SliSink, SliSinkStats, SpooledEvent, SpoolInUse, Stream
from pulse.sli_sink.queue import SPOOL_FILE, EventSpool

SCHEMA = pa.schema([pa.field("cluster", pa.string(), nullable=False), pa.field("n", pa.int64(), nullable=False)])
STREAM = Stream("test", 1, SCHEMA)
T0 = datetime(2026, 11, 28, tzinfo=UTC)


def rows(*ns: int, cluster: str = "c") -> pa.Table:
    return pa.Table.from_pylist([{"cluster": cluster, "n": n} for n in ns], schema=SCHEMA)


def numbers(events: Sequence[SpooledEvent]) -> list[int]:
    return [int(e.value.split(b'"n":')[1].rstrip(b"}")) for e in events]


class ScriptedDelivery:
    """Kafka's part played by a list: `up` decides whether a round is acknowledged; `refuse` names numbers refused
    for good; `gate`, when set, holds every round until it opens."""

    def __init__(self, up: bool = True) -> None:
        self.up = up
        self.refuse: set[int] = set()
        self.received: list[SpooledEvent] = []
        self.gate: threading.Event | None = None
        self.in_round = threading.Event()
        self.closed = False

    def deliver(self, events: Sequence[SpooledEvent], while_waiting: Callable[[], bool]) -> Outcome:
        self.in_round.set()
        try:
            while self.gate is not None and not self.gate.wait(0.05):
                if not while_waiting():
                    return Outcome(error="_STOPPED")
            if not self.up:
                return Outcome(error="_TRANSPORT")
            outcome = Outcome()
            for event, n in zip(events, numbers(events), strict=True):
                if n in self.refuse:
                    outcome.rejected[event.identity] = "MSG_SIZE_TOO_LARGE"
                else:
                    self.received.append(event)
                    outcome.delivered.add(event.identity)
            return outcome
        finally:
            self.in_round.clear()

    def close(self) -> None:
        self.closed = True


def make_sink(directory: Path, delivery: ScriptedDelivery, **options: float) -> SliSink:
    settings: dict[str, float] = {"retry_after_s": 0.05, "spool_interval_s": 0.01, **options}
    return SliSink(
        directory,
        delivery,
        queue_size=int(settings.pop("queue_size", 1000)),
        spool_max_bytes=int(settings.pop("spool_max_bytes", 1 << 20)),
        **settings,
    )


@pytest.fixture
def sinks() -> Iterator[list[SliSink]]:
    started: list[SliSink] = []
    yield started
    for sink in started:
        sink.stop(grace_s=0)


def await_stats(sink: SliSink, accept: Callable[[SliSinkStats], bool], what: str) -> SliSinkStats:
    return poll(sink.stats, accept, 10, what, interval_s=0.01)


def test_rows_are_delivered_in_the_order_offered(tmp_path: Path, sinks: list[SliSink]) -> None:
    delivery = ScriptedDelivery()
    sink = make_sink(tmp_path, delivery).start()
    sinks.append(sink)
    for start in range(0, 30, 3):
        assert sink.offer(STREAM, rows(start, start + 1, start + 2))
    stats = await_stats(sink, lambda s: s.delivered == 30, "30 delivered")
    assert numbers(delivery.received) == list(range(30))
    assert [e.seq for e in delivery.received] == list(range(30))
    assert stats.queued == 30 and stats.spool_events == 0 and sum(stats.dropped.values()) == 0


def test_spooled_events_survive_a_restart_and_go_first(tmp_path: Path, sinks: list[SliSink]) -> None:
    down = ScriptedDelivery(up=False)
    first = make_sink(tmp_path, down).start()
    first.offer(STREAM, rows(0, 1, 2))
    await_stats(first, lambda s: s.queued == 3 and s.delivery_errors >= 1, "a failed round")
    first.offer(STREAM, rows(3, 4))
    await_stats(first, lambda s: s.queued == 5, "5 spooled")
    first.stop(grace_s=0)
    assert down.closed and first.stats().spool_events == 5

    up = ScriptedDelivery()
    second = make_sink(tmp_path, up).start()
    sinks.append(second)
    second.offer(STREAM, rows(5, 6))
    await_stats(second, lambda s: s.delivered == 7, "7 delivered")
    assert numbers(up.received) == list(range(7)), "the spooled events first, then the new ones, each once"
    assert len({e.identity for e in up.received}) == 7
    assert {e.source for e in up.received[:5]} == {first.source}
    assert not (tmp_path / SPOOL_FILE).exists() or (tmp_path / SPOOL_FILE).read_bytes() == b""


def test_a_refused_event_is_dropped_as_rejected_and_the_rest_delivered(tmp_path: Path, sinks: list[SliSink]) -> None:
    delivery = ScriptedDelivery()
    delivery.refuse = {1}
    sink = make_sink(tmp_path, delivery).start()
    sinks.append(sink)
    sink.offer(STREAM, rows(0, 1, 2))
    stats = await_stats(sink, lambda s: s.delivered == 2 and s.spool_events == 0, "2 delivered")
    assert numbers(delivery.received) == [0, 2]
    assert stats.dropped["rejected"] == 1


def test_a_full_handoff_refuses_the_newest_rows_and_counts_them(tmp_path: Path) -> None:
    sink = make_sink(tmp_path, ScriptedDelivery(), queue_size=4)  # not started: nothing drains the hand-off
    assert sink.offer(STREAM, rows(0, 1, 2))
    assert not sink.offer(STREAM, rows(3, 4)), "two more rows do not fit: the table is refused whole"
    assert sink.offer(STREAM, rows(5))
    stats = sink.stats()
    assert stats.dropped["queue_full"] == 2 and stats.handoff_rows == 4


def test_a_full_spool_drops_the_oldest_and_counts_them(tmp_path: Path, sinks: list[SliSink]) -> None:
    line = len(EventSpool(tmp_path / "probe", 1 << 20).codec.encode(_event(10), T0))
    delivery = ScriptedDelivery(up=False)
    sink = make_sink(tmp_path / "spool", delivery, spool_max_bytes=10 * line).start()
    sinks.append(sink)
    for n in range(10, 25):  # two digits each: every line as long as the probe's
        sink.offer(STREAM, rows(n))
        await_stats(sink, partial(queued_at_least, n - 9), f"event {n} spooled")
    stats = sink.stats()
    assert stats.dropped["spool_full"] == 5 and stats.spool_events == 10
    delivery.up = True
    await_stats(sink, lambda s: s.delivered == 10, "the 10 kept delivered")
    assert numbers(delivery.received) == list(range(15, 25)), "the oldest five went"


def queued_at_least(count: int, stats: SliSinkStats) -> bool:
    return stats.queued >= count


def _event(n: int) -> SpooledEvent:
    return SpooledEvent("test", 1, "abcd1234", n, b"c", b'{"cluster":"c","n":%d}' % n)


def test_offer_returns_while_a_round_waits_on_the_cluster(tmp_path: Path, sinks: list[SliSink]) -> None:
    delivery = ScriptedDelivery()
    delivery.gate = threading.Event()
    sink = make_sink(tmp_path, delivery).start()
    sinks.append(sink)
    sink.offer(STREAM, rows(0))
    poll(delivery.in_round.is_set, bool, 10, "a round under way", interval_s=0.01)
    for n in range(1, 50):
        assert sink.offer(STREAM, rows(n))
    assert delivery.in_round.is_set() and not delivery.gate.is_set(), "the round is still held: offer did not wait"
    await_stats(sink, lambda s: s.queued == 50, "rows spooled while the round waits")
    delivery.gate.set()
    await_stats(sink, lambda s: s.delivered == 50, "all delivered once the round ends")
    assert numbers(delivery.received) == list(range(50))


def test_corrupt_spool_lines_are_counted_and_removed(tmp_path: Path, sinks: list[SliSink]) -> None:
    spool = EventSpool(tmp_path, 1 << 20)
    with spool.locked():
        spool.append([_event(0)], T0)
    with (tmp_path / SPOOL_FILE).open("ab") as f:
        f.write(b"not a line\n")
    with spool.locked():
        spool.append([_event(1)], T0)
    delivery = ScriptedDelivery()
    sink = make_sink(tmp_path, delivery).start()
    sinks.append(sink)
    stats = await_stats(sink, lambda s: s.delivered == 2, "the two good lines delivered")
    assert stats.dropped["corrupt"] == 1
    assert numbers(delivery.received) == [0, 1]


def test_a_second_sink_on_the_same_spool_refuses_to_start(tmp_path: Path, sinks: list[SliSink]) -> None:
    sinks.append(make_sink(tmp_path, ScriptedDelivery()).start())
    with pytest.raises(SpoolInUse, match="another SLI sink"):
        make_sink(tmp_path, ScriptedDelivery()).start()


def test_stop_spools_what_was_handed_over(tmp_path: Path) -> None:
    delivery = ScriptedDelivery(up=False)
    sink = make_sink(tmp_path, delivery, retry_after_s=3600).start()
    await_stats(sink, lambda s: s.rounds == 0, "started")
    sink.offer(STREAM, rows(0, 1))
    sink.stop(grace_s=0)
    spool = EventSpool(tmp_path, 1 << 20)
    assert numbers(spool.read().alerts) == [0, 1]
