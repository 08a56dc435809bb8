"""The one poller of share and streams groups: each tick records the reader's read on the board for its cluster at
the clock's time, and closing closes the reader's kept client."""

from __future__ import annotations

from lag.ingest.group_type_poller import GroupTypePoller


class CountingReader:
    def __init__(self) -> None:
        self.reads = 0
        self.closed = False

    def read(self) -> str:
        self.reads += 1
        return f"read {self.reads}"

    def close(self) -> None:
        self.closed = True


class Board:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, float]] = []

    def record(self, cluster: str, read: str, now_s: float) -> None:
        self.recorded.append((cluster, read, now_s))


def test_each_tick_records_a_fresh_read_and_close_closes_the_reader() -> None:
    reader, board = CountingReader(), Board()
    clock = iter([10.0, 20.0])
    poller = GroupTypePoller("east", reader, board, clock_s=lambda: next(clock))
    poller.poll()
    poller.poll()
    assert board.recorded == [("east", "read 1", 10.0), ("east", "read 2", 20.0)]
    assert not reader.closed
    poller.close()
    assert reader.closed
