"""The service lock's turns: a writer applying commits in chunks lets a reader that waits in between two chunks,
whichever core the reader wakes on (issue #15; docs/benchmarks.md, "Status while ingesting")."""

from __future__ import annotations

import struct
import threading
import time

from lag.ingest.offsets_topic import INGEST_CHUNK, OffsetsTopicReader
from lag.service import LagService
from lag.store.freshness import SourceHealth
from lag.store.lock import ServiceLock
from pulse.config import LagConfig


def until(*, waiting: tuple[ServiceLock, int]) -> None:
    """Waits for a thread to be blocked on a lock (polled: blocking is not an event anyone can signal)."""
    lock, n = waiting
    deadline = time.monotonic() + 30
    while lock.waiting < n:
        assert time.monotonic() < deadline, f"{n} thread(s) never blocked on the lock"
        time.sleep(0.001)


def test_it_is_reentrant_and_counts_only_blocked_threads() -> None:
    lock = ServiceLock()
    with lock, lock:  # the service's methods take it inside `locked()`
        assert lock.waiting == 0
        taken = list[bool]()
        other = threading.Thread(target=lambda: taken.append(lock.acquire(blocking=False)))
        other.start()
        other.join()
        assert taken == [False] and lock.waiting == 0  # a try is not a wait
    assert lock.acquire(blocking=False)
    lock.release()


def test_a_waiting_thread_has_the_lock_before_the_writer_takes_it_again() -> None:
    lock = ServiceLock()
    release = threading.Event()

    def reader() -> None:
        with lock:
            release.wait()

    lock.acquire()
    thread = threading.Thread(target=reader)
    thread.start()
    until(waiting=(lock, 1))
    lock.release()
    lock.let_waiting_in()
    taken = lock.acquire(blocking=False)  # False: the reader holds it now, the writer's next hold waits for it
    if taken:
        lock.release()
    release.set()
    thread.join()
    assert not taken
    lock.let_waiting_in()  # nobody waits: returns at once
    assert lock.acquire(blocking=False)
    lock.release()


def test_a_waiter_that_gave_up_does_not_hold_the_writer() -> None:
    lock = ServiceLock()
    lock.acquire()
    gave_up = list[bool]()
    thread = threading.Thread(target=lambda: gave_up.append(lock.acquire(timeout=0.01)))
    thread.start()
    thread.join()
    assert gave_up == [False] and lock.waiting == 0
    lock.release()
    lock.let_waiting_in()


def commit(group: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    """An offset-commit record as Kafka 3.x writes it: key v1, value v3 (empty metadata, leader epoch -1)."""

    def s16(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()

    key = struct.pack(">h", 1) + s16(group) + s16("t") + struct.pack(">i", partition)
    return key, struct.pack(">hqi", 3, offset, -1) + s16("") + struct.pack(">q", 1_000)


class RecordingLock(ServiceLock):
    """The service lock, noting the writer's holds and the turns it gives between them."""

    def __init__(self) -> None:
        super().__init__()
        self.events = list[str]()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.events.append("hold")
        return super().acquire(blocking, timeout)

    def let_waiting_in(self) -> None:
        self.events.append("turn")
        super().let_waiting_in()


def test_ingest_gives_waiting_threads_a_turn_before_every_chunk() -> None:
    """Python's locks let the releasing thread take them straight back: without a turn between two chunks, a
    request woken on the other core waited through a whole poll (10 chunks) in the bench."""
    health = SourceHealth(stale_after_s=30, recovery_s=0)
    service = LagService(LagConfig(intervals=3), health)
    service.lock = lock = RecordingLock()
    source = OffsetsTopicReader("c", {}, service, health)
    records: list[tuple[bytes | None, bytes | None]] = [commit(f"g{i}", 0, 10) for i in range(INGEST_CHUNK * 5 // 2)]
    source.ingest(records)
    assert lock.events == ["turn", "hold"] * 3
    assert source.decoded["OffsetCommit"] == len(records)
