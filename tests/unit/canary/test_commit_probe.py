"""The commit probe against a cluster that is gone (a closed loopback port, no server): every attempt ends within
the probe's timeout and is counted under a name, shutdown cuts a waiting attempt short without counting it, and
`close` is not held by the commit left waiting for a coordinator (librdkafka's default held it 45 s)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from canary.commit_outcome import TIMED_OUT
from canary.commit_probe import CommitProbe
from pulse.config import ClusterConfig
from pulse.kafka_log import KafkaLogLimiter


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def probe() -> Iterator[CommitProbe]:
    cluster = ClusterConfig.model_validate({"name": "gone", "bootstrap_servers": [f"127.0.0.1:{closed_port()}"]})
    probe = CommitProbe(cluster, "t", "g", timeout_s=0.5, kafka_log=KafkaLogLimiter())
    try:
        yield probe
    finally:
        probe.close()


def test_an_unanswered_commit_is_counted_as_timed_out(probe: CommitProbe) -> None:
    results = [probe.commit_once() for _ in range(3)]
    # librdkafka gives up on the coordinator (_WAIT_COORD) as the probe's deadline passes: on a starved host its
    # answer may be served first
    assert all(r is not None and not r.ok and r.error in (TIMED_OUT, "_WAIT_COORD") for r in results), results


def test_stop_ends_a_waiting_attempt_without_counting_it(probe: CommitProbe) -> None:
    stop = threading.Event()
    stop.set()
    assert probe.commit_once(stop) is None
