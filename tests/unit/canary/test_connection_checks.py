"""Connection checks that cannot answer: a check that raises marks its broker down (canary/service.py `_checked`),
and a listener announcing a huge frame is a protocol error, never a buffer (pulse/kafka/broker_probe.py)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from canary.service import CanaryService
from pulse.config import CanaryConfig, ClusterConfig
from pulse.kafka.broker_probe import CheckResult, check_broker


def test_a_check_that_raised_marks_its_broker_down() -> None:
    service = CanaryService(ClusterConfig(name="c", bootstrap_servers=["127.0.0.1:1"]), CanaryConfig())
    good: Future[CheckResult] = Future()
    good.set_result(CheckResult(3, True, 0.01))
    service._checked(3, time.monotonic(), good)
    assert service.broker_up() == {3: True}

    raised: Future[CheckResult] = Future()
    raised.set_exception(RuntimeError("parser bug"))
    service._checked(3, time.monotonic(), raised)
    assert service.broker_up() == {3: False}


@pytest.fixture
def announcer() -> Iterator[tuple[int, list[bytes]]]:
    """A listener that answers any request with the 4-byte size the test puts in `said`."""
    said: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(said[0])
            conn.recv(1)  # holds the connection open until the client closes it

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], said
    server.close()
    thread.join(timeout=5)


@pytest.mark.parametrize("size", [2**31 - 1, -5, 2])
def test_an_impossible_frame_size_is_a_protocol_error(announcer: tuple[int, list[bytes]], size: int) -> None:
    port, said = announcer
    said.append(struct.pack(">i", size))
    result = check_broker(1, "127.0.0.1", port, timeout_s=30.0)
    assert (result.ok, result.error) == (False, "protocol")
