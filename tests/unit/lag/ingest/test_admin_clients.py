"""Admin clients renewed without freeing one with requests in flight, and timeouts scaled to the partitions."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from lag.ingest.admin_clients import MAX_TIMEOUT_S, AdminClients, gather, request_timeout_s


def test_timeouts_grow_with_partitions_within_bounds() -> None:
    assert request_timeout_s(0) == 5.0
    assert request_timeout_s(10_000) == pytest.approx(25.0)
    assert request_timeout_s(200_000) == MAX_TIMEOUT_S


def test_a_renewed_client_is_kept_until_its_futures_are_done() -> None:
    made: list[object] = []

    def new() -> object:
        made.append(object())
        return made[-1]

    clients = AdminClients(new)
    first = clients.client
    assert clients.client is first  # created once, on first use
    pending: Future[Any] = Future()
    finished: Future[Any] = Future()
    finished.set_result(1)
    clients.track([pending, finished])
    second = clients.renew()
    assert second is not first and clients.client is second
    assert clients.retired() == 1  # `first` still referenced: its request is in flight
    pending.set_result(2)
    assert clients.retired() == 0  # dropped once done
    clients.track([finished])
    clients.renew()
    assert clients.retired() == 0  # nothing pending: nothing kept


def test_gather_raises_on_an_unanswered_future_and_returns_results() -> None:
    done: Future[Any] = Future()
    done.set_result("a")
    waiting: Future[Any] = Future()
    with pytest.raises(TimeoutError, match="1 of 2 requests unanswered"):
        gather({"x": done, "y": waiting}, 0.01)
    waiting.set_result("b")
    assert gather({"x": done, "y": waiting}, 0.01) == {"x": "a", "y": "b"}
