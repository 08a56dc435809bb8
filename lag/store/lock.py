"""The lag service's lock: a reentrant lock whose writer, between two holds, lets the threads already waiting have it
first. Python's locks are not fair: a thread that releases and takes the lock again at once gets it back before a
waiter woken on the other core does, so a status request waited through a whole 10-chunk poll (docs/benchmarks.md,
"Status while ingesting")."""

from __future__ import annotations

import threading
from types import TracebackType


class ServiceLock:
    """An `RLock` (`with lock:`, `acquire`, `release`) that counts the threads blocked on it, so that a writer applying
    work in chunks can call `let_waiting_in()` between two holds."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._turns = threading.Condition(threading.Lock())
        self._waiting = 0
        """Threads blocked in `acquire` now."""
        self._served = 0
        """Waiters that got the lock, ever: a writer waits for this to pass what it was when it looked."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking=False):  # free, or already this thread's: no turn to count
            return True
        if not blocking:
            return False
        with self._turns:
            self._waiting += 1
        got = False
        try:
            got = self._lock.acquire(True, timeout)
        finally:
            with self._turns:
                self._waiting -= 1
                self._served += got
                self._turns.notify_all()
        return got

    @property
    def waiting(self) -> int:
        """Threads blocked on the lock now."""
        return self._waiting

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def let_waiting_in(self) -> None:
        """Called without the lock: returns once every thread that was blocked on it has had it (or gave up on a
        timeout); threads that come later do not hold the caller up. Returns at once when nobody waits."""
        with self._turns:
            due = self._served + self._waiting
            self._turns.wait_for(lambda: self._served >= due or self._served + self._waiting < due)
