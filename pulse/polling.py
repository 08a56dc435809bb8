"""The one way kafka-pulse waits for a state it cannot be told about (a service up, a query answered, a test's
condition): poll, and on timeout raise with the last value seen, so the failure says what was there instead."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from pulse.errors import PulseError

T = TypeVar("T")

LAST_SEEN_CHARS = 2000
"""How much of the last value a timeout message carries: enough to read, never a whole page of metrics."""


class PollTimeout(PulseError):
    """The awaited state was not reached in time; the message names it and shows the last value seen."""

    def __init__(self, message: str, last: object = None) -> None:
        super().__init__(message)
        self.last = last


def poll(
    fetch: Callable[[], T], accept: Callable[[T], object], timeout_s: float, what: str, interval_s: float = 0.2
) -> T:
    """Call `fetch` until `accept` likes its result and return that result; after `timeout_s` raise PollTimeout
    naming `what` with the last result seen. `fetch` runs at least once, and once more at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        last = fetch()
        if accept(last):
            return last
        if time.monotonic() >= deadline:
            message = f"{what} not reached after {timeout_s:g} s; last seen: {last!r}"
            raise PollTimeout(message[:LAST_SEEN_CHARS], last)
        time.sleep(interval_s)
