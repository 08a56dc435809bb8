"""The share-group board, /metrics families and extension routes without a broker: missing lag has no sample and
is null in JSON, a failed read keeps the last verdicts with its reason, unknown clusters and groups answer 404."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, generate_latest

from lag.serve.share_groups import NOT_READ_YET, ShareGroupApi, ShareGroupCollector
from lag.store.share_board import ShareBoard
from pulse.http import Request, Router
from pulse.kafka.share_groups import ShareGroup, ShareGroupsRead, ShareMember, SharePartition

READ = ShareGroupsRead(
    (
        ShareGroup(
            "orders",
            "Stable",
            (ShareMember("m", "c", "h", 2),),
            (SharePartition("o", 0, 40, 5), SharePartition("o", 1, None, None)),
        ),
    )
)


def board_at(*times: float, read: ShareGroupsRead = READ) -> ShareBoard:
    board = ShareBoard(stall_after_s=60.0)
    for t in times:
        board.record("prod", read, t)
    return board


def get(board: ShareBoard, path: str, clusters: tuple[str, ...] = ()) -> tuple[int, dict[str, object]]:
    router = Router(ShareGroupApi(board, clusters).routes())
    response = router.handle(Request("GET", path))
    return response.status, json.loads(response.body)


def test_metrics_omit_what_the_broker_did_not_give() -> None:
    registry = CollectorRegistry()
    registry.register(ShareGroupCollector(board_at(0.0, 61.0)))
    text = generate_latest(registry).decode()
    p0 = 'cluster="prod",partition="0",share_group="orders",topic="o"'
    p1 = 'cluster="prod",partition="1",share_group="orders",topic="o"'
    assert f"kafka_pulse_lag_share_partition_lag{{{p0}}} 5.0" in text
    assert f"kafka_pulse_lag_share_partition_status{{{p0}}} 1.0" in text  # 61 s unmoved with 5 waiting
    assert f"kafka_pulse_lag_share_partition_status{{{p1}}} -1.0" in text
    assert f"kafka_pulse_lag_share_partition_lag{{{p1}}}" not in text  # never 0
    assert 'kafka_pulse_lag_share_group_state{cluster="prod",share_group="orders",state="Stable"} 1.0' in text
    assert 'kafka_pulse_lag_share_groups_read_complete{cluster="prod"} 1.0' in text


def test_a_failed_read_keeps_the_last_verdicts_with_its_reason() -> None:
    board = board_at(0.0)
    reading = board.record("prod", ShareGroupsRead(reason="share groups: cannot connect"), 30.0)
    assert [v.group for v in reading.verdicts] == ["orders"] and reading.reason == "share groups: cannot connect"
    assert reading.read_at_s == 0.0


def test_routes_answer_in_burrows_envelope_with_nulls_for_unknowns() -> None:
    board = board_at(0.0, 61.0)
    code, body = get(board, "/v3/kafka/prod/sharegroup")
    assert code == 200 and body["sharegroups"] == ["orders"] and body["error"] is False
    code, body = get(board, "/v3/kafka/prod/sharegroup/orders")
    status = body["status"]
    assert code == 200 and isinstance(status, dict) and status["status"] == "STALLED" and status["totallag"] == 5
    first, second = status["partitions"]
    assert first["reason"] == "o-0: start offset 40 unmoved for 61 s with 5 records waiting"
    assert second["lag"] is None and second["start_offset"] is None and second["status"] == "UNKNOWN"
    assert get(board, "/v3/kafka/other/sharegroup")[0] == 404
    assert get(board, "/v3/kafka/prod/sharegroup/nope")[0] == 404


def test_a_configured_cluster_not_read_yet_is_an_incomplete_listing_not_a_missing_one() -> None:
    empty = ShareBoard(stall_after_s=60.0)
    code, body = get(empty, "/v3/kafka/prod/sharegroup", clusters=("prod",))
    assert (code, body["sharegroups"], body["reason"]) == (200, [], NOT_READ_YET)
    assert get(empty, "/v3/kafka/other/sharegroup", clusters=("prod",))[0] == 404
