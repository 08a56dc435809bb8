"""The streams-group board, /metrics families and extension routes without a broker: NOT_READY and stale members
flagged, the input-topic lag is the evaluator's verdict for the same group id, a failed read keeps the last groups
with its reason, unknown clusters and groups answer 404."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, generate_latest

from lag.serve.streams_groups import StreamsGroupApi, StreamsGroupCollector
from lag.service import LagService
from lag.store.streams_board import StreamsBoard
from pulse.config import LagConfig
from pulse.http import Request, Router
from pulse.kafka.streams_groups import StreamsGroup, StreamsGroupsRead, StreamsMember

NOW = 1_700_000_000_000
READ = StreamsGroupsRead(
    (
        StreamsGroup(
            "wc",
            "Reconciling",
            5,
            5,
            2,
            (StreamsMember("new", "c", "h", "p", 5, 2, 2), StreamsMember("old", "c", "h", "p", 4, 1, 0)),
            ("in",),
        ),
        StreamsGroup("missing", "NotReady", 1, 0, 0),
    )
)


def service() -> LagService:
    """The evaluator holding commits of `wc` (its input topic `in`, 30 behind its HWM) and none of `missing`."""
    lag = LagService(LagConfig(intervals=3, min_distance_s=1), clock_ms=lambda: NOW)
    with lag.locked() as store:
        store.add_hwm("prod", "in", 0, 100, NOW - 30_000)
        for i in range(3):
            store.add_commit("prod", "wc", "in", 0, 60 + i * 5, NOW - 30_000 + i * 10_000, NOW)
    return lag


def board(read: StreamsGroupsRead = READ) -> StreamsBoard:
    out = StreamsBoard()
    out.record("prod", read, 0.0)
    return out


def get(path: str) -> tuple[int, dict[str, object]]:
    router = Router(StreamsGroupApi(board(), service()).routes())
    response = router.handle(Request("GET", path))
    return response.status, json.loads(response.body)


def test_metrics_flag_not_ready_and_stale_members_with_the_evaluators_lag() -> None:
    registry = CollectorRegistry()
    registry.register(StreamsGroupCollector(board(), service()))
    text = generate_latest(registry).decode()
    wc, missing = 'cluster="prod",streams_group="wc"', 'cluster="prod",streams_group="missing"'
    assert f"kafka_pulse_streams_group_status{{{wc}}} 1.0" in text  # STALE_TOPOLOGY
    assert f"kafka_pulse_streams_group_status{{{missing}}} 2.0" in text  # NOT_READY
    assert f"kafka_pulse_streams_group_stale_topology_members{{{wc}}} 1.0" in text
    assert f"kafka_pulse_streams_group_members{{{wc}}} 2.0" in text
    assert f"kafka_pulse_streams_group_topology_epoch{{{wc}}} 2.0" in text
    assert 'kafka_pulse_streams_group_state{cluster="prod",state="Reconciling",streams_group="wc"} 1.0' in text
    assert f"kafka_pulse_streams_group_input_lag{{{wc}}} 30.0" in text  # HWM 100 - committed 70
    assert f"kafka_pulse_streams_group_input_lag{{{missing}}}" not in text  # no commit: no lag, never 0
    assert f"kafka_pulse_streams_group_input_lag_status{{{missing}}} 0.0" in text  # NOTFOUND
    assert 'kafka_pulse_streams_groups_read_complete{cluster="prod"} 1.0' in text


def test_a_failed_read_keeps_the_last_groups_with_its_reason() -> None:
    kept = board()
    reading = kept.record("prod", StreamsGroupsRead(reason="streams groups: cannot connect"), 30.0)
    assert [g.group for g in reading.groups] == ["wc", "missing"] and reading.read_at_s == 0.0
    assert reading.reason == "streams groups: cannot connect"
    assert kept.members("prod") == {"wc": 2, "missing": 0} and kept.members("other") == {}  # admin ingestion's feed
    assert kept.inputs("prod") == {"wc": ("in",), "missing": ()} and kept.inputs("other") == {}  # log starts read


def test_routes_answer_in_burrows_envelope_with_the_evaluators_verdict() -> None:
    code, body = get("/v3/kafka/prod/streamsgroup")
    assert code == 200 and body["streamsgroups"] == ["wc", "missing"] and body["error"] is False
    code, body = get("/v3/kafka/prod/streamsgroup/wc")
    status = body["status"]
    assert code == 200 and isinstance(status, dict) and status["status"] == "STALE_TOPOLOGY"
    assert status["reason"] == "wc: 1 member(s) on a topology epoch below 2: old"
    assert [(m["member_id"], m["stale_topology"]) for m in status["members"]] == [("new", False), ("old", True)]
    assert status["lag"]["group"] == "wc" and status["lag"]["totallag"] == 30
    assert [(p["topic"], p["partition"], p["current_lag"]) for p in status["lag"]["partitions"]] == [("in", 0, 30)]
    code, body = get("/v3/kafka/prod/streamsgroup/missing")
    status = body["status"]
    assert isinstance(status, dict) and status["status"] == "NOT_READY" and status["topology_epoch"] == 0
    assert status["lag"]["status"] == "NOTFOUND"
    assert get("/v3/kafka/other/streamsgroup")[0] == 404
    assert get("/v3/kafka/prod/streamsgroup/nope")[0] == 404
