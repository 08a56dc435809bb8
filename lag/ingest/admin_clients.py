"""Admin clients owned by one thread each, renewed without freeing one that still has requests in flight, and the
request timeouts scaled to the partitions a round asks about.

A librdkafka client freed while its futures are pending, or shared between threads while another replaces it,
can abort the process in native code (glibc's "double free or corruption" on a 10,000-partition cluster,
docs/benchmarks.md "A 10,000-partition cluster"). So each thread keeps its own `AdminClients`; a renewal retires
the old client with its unfinished futures, and the retired client is dropped only once every one of them is done.

Offsets (HWMs, a topic's start and end) are not read with the Admin API's ListOffsets at all: with librdkafka
2.16 an Admin ListOffsets that reaches its request timeout while the broker's answer is on its way aborts the
process (reproduced with 100 partitions and a 10 ms timeout: "double free or corruption (out)" or SIGSEGV, with
one client on one thread, never renewed), while a consumer's `offsets_for_times` times out cleanly.
`pulse.kafka.offsets.read_offsets` asks through a consumer instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka.admin import AdminClient

from pulse.profile import ADMIN_SETTINGS

_LOG = logging.getLogger(__name__)

RENEW_AFTER_FAILURES = 3
"""Consecutive failed HWM rounds (or Admin API polls) after which that thread's admin client is replaced."""

BASE_TIMEOUT_S = 5.0
"""Request timeout of a round over a few partitions (the figure every request used before scaling)."""
PER_PARTITION_S = 0.002
"""Added per partition asked: 10,000 partitions get 25 s. On the loaded host a ListOffsets round over 10,000
partitions did not answer within 5 s (docs/benchmarks.md "A 10,000-partition cluster")."""
MAX_TIMEOUT_S = 120.0


def request_timeout_s(partitions: int) -> float:
    """A request timeout for one Admin round over `partitions` partitions (pure)."""
    return min(MAX_TIMEOUT_S, BASE_TIMEOUT_S + PER_PARTITION_S * max(0, partitions))


def new_admin_client(client_config: dict[str, Any]) -> AdminClient:
    """An admin client of the lag sources: the profile's admin settings, a 5 s socket timeout."""
    return AdminClient({**client_config, **ADMIN_SETTINGS, "socket.timeout.ms": 5000})


def all_done(futures: Iterable[Future[Any]]) -> bool:
    return all(f.done() for f in futures)


class AdminClients:
    """The current admin client of one thread, the futures it has in flight, and retired clients kept alive until
    their last future is done."""

    def __init__(self, new_client: Callable[[], Any]) -> None:
        self._new_client = new_client
        self._lock = threading.Lock()
        self._client: Any = None
        self._in_flight: list[Future[Any]] = []
        self._retired: list[tuple[Any, list[Future[Any]]]] = []

    @property
    def client(self) -> AdminClient:
        """The current client, created on first use (configuring a source connects to nothing)."""
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client  # type: ignore[no-any-return]

    def track(self, futures: Iterable[Future[Any]]) -> list[Future[Any]]:
        """Remember futures of the current client until they are done; returns them as a list."""
        listed = list(futures)
        with self._lock:
            self._in_flight = [f for f in self._in_flight if not f.done()] + listed
        return listed

    def renew(self) -> AdminClient:
        """Replace the current client; it stays referenced (so not freed) while any of its futures is pending."""
        with self._lock:
            old, pending = self._client, [f for f in self._in_flight if not f.done()]
            if old is not None and pending:
                self._retired.append((old, pending))
            self._client, self._in_flight = self._new_client(), []
            self._prune()
            return self._client  # type: ignore[no-any-return]

    def retired(self) -> int:
        """Retired clients still kept for their pending futures."""
        with self._lock:
            self._prune()
            return len(self._retired)

    def _prune(self) -> None:
        kept = [(c, [f for f in fs if not f.done()]) for c, fs in self._retired]
        self._retired = [(c, fs) for c, fs in kept if fs]


def gather(futures: dict[Any, Future[Any]], timeout_s: float) -> dict[Any, Any]:
    """Every future's result, awaited together up to `timeout_s` in all; the first error raises, and a future not
    done by then raises TimeoutError naming how many were still pending (they stay tracked by their client)."""
    _, pending = wait(futures.values(), timeout=timeout_s)
    if pending:
        raise TimeoutError(f"{len(pending)} of {len(futures)} requests unanswered after {timeout_s:.0f} s")
    return {key: future.result(timeout=0) for key, future in futures.items()}
