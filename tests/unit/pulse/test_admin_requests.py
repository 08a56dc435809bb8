"""`await_result` (pulse/admin_requests.py): an Admin future's error comes back as a new exception with the same
KafkaError, so callers still read its code, and nothing keeps the stored one (or the client behind it) in a cycle."""

from __future__ import annotations

import weakref
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from pulse.admin_requests import await_result


def test_the_result_of_a_done_future_is_returned() -> None:
    future: Future[Any] = Future()
    future.set_result({"g": 1})
    assert await_result(future, 0.1) == {"g": 1}


def test_a_future_not_done_in_time_is_a_timeout() -> None:
    future: Future[Any] = Future()
    with pytest.raises(TimeoutError):
        await_result(future, 0.01)


def test_a_kafka_error_is_raised_afresh_with_the_same_code() -> None:
    future: Future[Any] = Future()
    stored = KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "no Describe on the group"))
    future.set_exception(stored)
    with pytest.raises(KafkaException) as raised:
        await_result(future, 0.1)
    assert raised.value is not stored
    assert raised.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert stored.__traceback__ is None  # never raised, so it holds no frame (and no client) of ours


def test_the_raised_exception_does_not_keep_the_waiting_frame_s_objects() -> None:
    """The stored exception raised by `Future.result` would carry a traceback into the caller's frame, where the
    AdminClient lives; the fresh one is created after the wait and references nothing of the future."""

    class Client:
        """Stands for the AdminClient a caller holds while it waits."""

    def wait(future: Future[Any]) -> weakref.ref[Client]:
        client = Client()
        with pytest.raises(KafkaException):
            await_result(future, 0.1)
        return weakref.ref(client)

    future: Future[Any] = Future()
    future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    ref = wait(future)
    assert ref() is None  # freed at once by reference counting, not left to the garbage collector
    assert future.exception() is not None and future.exception().__traceback__ is None  # type: ignore[union-attr]


def test_any_other_error_is_a_runtime_error_naming_it() -> None:
    future: Future[Any] = Future()
    future.set_exception(ValueError("bad answer"))
    with pytest.raises(RuntimeError, match="ValueError: bad answer"):
        await_result(future, 0.1)
