"""The array windows: ring order, wrap-around, Burrow's min-distance merge, and run reuse."""

from __future__ import annotations

from lag.store import Ingest, OffsetStore
from lag.window import CommitWindows, HwmWindows


def test_ring_keeps_the_newest_n_oldest_first() -> None:
    w = CommitWindows(intervals=3)
    slot = w.allocate(1)
    for i in range(5):
        w.push(slot, 100 * i, 1000 * i, i)
    assert w.read(slot) == ([200, 300, 400], [2000, 3000, 4000], [2, 3, 4])
    assert w.newest(slot) == (400, 4000, 4)


def test_min_distance_merge_keeps_the_bucket_start_timestamp() -> None:
    """Burrow's min-distance merge: the previous cell takes the new offset and lag but keeps its timestamp."""
    w = CommitWindows(intervals=5, min_distance_ms=1000)
    slot = w.allocate(1)
    assert not w.push(slot, 10, 10_000, 5)
    assert w.push(slot, 20, 10_400, 3)
    assert w.push(slot, 30, 10_999, 1)  # still < 1000 ms after the bucket start
    assert not w.push(slot, 40, 11_000, 0)
    assert w.read(slot) == ([30, 40], [10_000, 11_000], [1, 0])


def test_runs_are_contiguous_and_reused() -> None:
    w = CommitWindows(intervals=2)
    a = w.allocate(3)
    b = w.allocate(2)
    assert b == a + 3
    w.push(a + 1, 5, 5, 0)
    w.release(a, 3)
    assert w.allocate(3) == a
    assert w.count(a + 1) == 0


def test_hwm_ring_and_partition_growth() -> None:
    h = HwmWindows(capacity=2)
    h.add("c", "t", 0, 10, 1)
    h.add("c", "t", 2, 30, 1)
    assert h.partition_count("c", "t") == 3
    assert h.latest("c", "t", 1) is None
    h.add("c", "t", 0, 11, 2)
    h.add("c", "t", 0, 12, 3)
    assert h.history("c", "t", 0) == ([11, 12], [2, 3])


def test_store_drops_what_burrow_drops_and_counts_it() -> None:
    s = OffsetStore(intervals=3, expire_group_ms=60_000, group_deny="^console-")
    assert s.add_commit("c", "g", "t", 0, 5, 1000, now_ms=1000) is Ingest.NO_TOPIC
    s.add_hwm("c", "t", 1, 100, 1000)
    assert s.add_commit("c", "g", "t", 2, 5, 1000, now_ms=1000) is Ingest.NO_PARTITION
    assert s.add_commit("c", "g", "t", 0, 5, 1000, now_ms=1000) is Ingest.NO_HWM
    assert s.add_commit("c", "console-x", "t", 1, 5, 1000, now_ms=1000) is Ingest.FILTERED
    assert s.add_commit("c", "g", "t", 1, 5, 1000, now_ms=100_000) is Ingest.EXPIRED
    assert s.add_commit("c", "g", "t", 1, 40, 1000, now_ms=1000) is Ingest.STORED
    slots = list(s.slots("c", "g"))
    assert [(x.topic, x.partition) for x in slots] == [("t", 0), ("t", 1)]  # a placeholder for partition 0
    assert s.commits.read(slots[1].slot) == ([40], [1000], [60])
    assert s.has_group("c", "g", now_ms=2000)
    assert not s.has_group("c", "g", now_ms=70_000)  # lazily purged after expire-group
    assert s.groups("c") == []


def test_partition_growth_keeps_existing_windows() -> None:
    s = OffsetStore(intervals=3)
    s.add_hwm("c", "t", 0, 100, 0)
    s.add_commit("c", "g", "t", 0, 50, 0, now_ms=0)
    s.add_hwm("c", "t", 1, 100, 0)
    assert s.add_commit("c", "g", "t", 1, 60, 1, now_ms=1) is Ingest.STORED
    slots = {x.partition: x.slot for x in s.slots("c", "g")}
    assert s.commits.read(slots[0])[0] == [50]
    assert s.commits.read(slots[1])[0] == [60]


def test_offset_tombstones_empty_windows_and_then_the_group() -> None:
    s = OffsetStore(intervals=3)
    s.add_hwm("c", "t", 0, 100, 0)
    s.add_hwm("c", "t", 1, 100, 0)
    s.add_commit("c", "g", "t", 0, 50, 0, now_ms=0)
    s.add_commit("c", "g", "t", 1, 50, 0, now_ms=0)
    s.clear_partition("c", "g", "t", 0)
    assert s.groups("c") == ["g"]
    s.clear_partition("c", "g", "t", 1)
    assert s.groups("c") == []


def test_a_group_on_many_topics_keeps_every_window() -> None:
    """Past 8 topics a group finds its runs through a dict instead of its chain; windows, deletes, partition growth
    and listing must not notice."""
    s = OffsetStore(intervals=2)
    topics = [f"t{i:02d}" for i in range(12)]
    for topic in topics:
        s.add_hwm("c", topic, 0, 1000, 0)
    for round_ in range(2):
        for i, topic in enumerate(reversed(topics)):
            assert s.add_commit("c", "g", topic, 0, 10 * i + round_, 1000 * round_, 1000) is Ingest.STORED
    assert s.group_topics("c", "g") == topics
    assert [x.topic for x in s.slots("c", "g")] == topics
    windows = {x.topic: s.commits.read(x.slot)[0] for x in s.slots("c", "g")}
    assert windows == {topic: [10 * (11 - i), 10 * (11 - i) + 1] for i, topic in enumerate(topics)}
    assert s.delete_group_topic("c", "g", "t05")
    s.add_hwm("c", "t07", 1, 1000, 0)  # partition added: the run moves, its window comes along
    assert s.add_commit("c", "g", "t07", 1, 3, 2000, 2000) is Ingest.STORED
    assert s.add_commit("c", "g", "t05", 0, 7, 2000, 2000) is Ingest.STORED  # a new run for a dropped topic
    slots = {(x.topic, x.partition): x.slot for x in s.slots("c", "g")}
    assert s.commits.read(slots[("t07", 0)])[0] == [40, 41]
    assert s.commits.read(slots[("t07", 1)])[0] == [3]
    assert s.commits.read(slots[("t05", 0)])[0] == [7]
    assert s.consumers_of("c", "t05") == ["g"]
    s.delete_topic("c", "t03")
    assert "t03" not in s.group_topics("c", "g") and len(s.group_topics("c", "g")) == 11
