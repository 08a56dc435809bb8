"""`check --lag-url`'s reader of consumer-group verdicts, against the Burrow v3 routes of a real local listener fed
directly: each group comes back as judged there (ERR with its worst partition), and a cluster the listener does
not evaluate is a failed read that says so."""

from __future__ import annotations

from kafka_pulse.check.consult.lag_listener import read_listener_verdicts
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import FailureKind, ProbeFailed
from kafka_pulse.check.judge.lag_verdicts import GroupVerdict, LagVerdicts
from lag.service import LagService
from pulse.config import HttpConfig, LagConfig
from tests.support.lag_api import serve_lag_api

NOW = 1_700_000_000_000


def stalled_service() -> LagService:
    """Group `g` committed the same offset three times with lag behind it (STALL, so ERR); `h` is on time."""
    service = LagService(LagConfig(mode="burrow", intervals=3, min_distance_s=1), clock_ms=lambda: NOW)
    with service.locked() as store:
        store.add_hwm("local", "t", 0, 100, NOW - 30_000)
        for i in range(3):
            store.add_commit("local", "g", "t", 0, 10, NOW - 30_000 + i * 10_000, NOW)
            store.add_commit("local", "h", "t", 0, 100, NOW - 30_000 + i * 10_000, NOW)
    return service


def test_the_listeners_group_verdicts_come_back_as_judged_there() -> None:
    server = serve_lag_api(stalled_service())
    try:
        got = read_listener_verdicts(server.url, "local", HttpConfig(), Deadline.after(5.0))
        assert isinstance(got, LagVerdicts) and got.source == server.url.rstrip("/") and got.unread == ()
        assert got.groups == (GroupVerdict("g", "ERR", "STALL", 90, got.groups[0].reason), GroupVerdict("h", "OK"))
        missing = read_listener_verdicts(server.url, "elsewhere", HttpConfig(), Deadline.after(5.0))
        assert isinstance(missing, ProbeFailed) and missing.kind is FailureKind.ERROR
        assert "has no cluster 'elsewhere'" in missing.reason
    finally:
        server.stop()
