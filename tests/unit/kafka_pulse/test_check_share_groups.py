"""Share groups in the check's `lag` section without a broker: the share-stall rule's verdicts are the ones shown
(STALLED named with partition and offset, CRIT through `lag.check_statuses` as STALL), a read without a window
judges nothing (INFO, lag kept, unknown lag null, never 0), an incomplete windowed read is UNKNOWN, and the board
and `/api/status` read the same verdicts as the section."""

from __future__ import annotations

from datetime import UTC, datetime

from kafka_pulse.check.consult.lag_listener import read_listener_shares
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import FailureKind, NotAvailable, ProbeFailed
from kafka_pulse.check.judge.share_verdicts import ShareFacts, add_share_groups, from_one_read
from kafka_pulse.check.judge.verdict import Section, Status
from kafka_pulse.status.document import StatusInputs, status_document
from kafka_pulse.status.in_process import in_process_check, share_facts_of
from lag.serve.routes import invalid_request
from lag.serve.share_groups import NOT_READ_YET, ShareGroupApi
from lag.store.share_board import ShareBoard
from pulse.config import ClusterConfig, HttpConfig, PulseConfig
from pulse.config.lag import LagCheckStatusMap
from pulse.http import HttpApp, HttpServer, Router
from pulse.kafka.share_groups import ShareGroup, ShareGroupsRead, ShareMember, SharePartition
from pulse.kafka.share_stall import ShareGroupVerdict, ShareStatus, verdict_from_json, verdict_json

LAG_OK = Section("lag", Status.OK, "2 group(s) judged by the evaluator", ("lag verdicts from x (running evaluator)",))
MEMBER = (ShareMember("m", "c", "h", 1),)
AT = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)


def read(*groups: ShareGroup) -> ShareGroupsRead:
    return ShareGroupsRead(tuple(groups))


def stalled_board() -> ShareBoard:
    """Group `sg` stalled on t-0 at offset 40 with 3 records waiting; `ok` moving; `cold` never fetched."""
    board = ShareBoard(stall_after_s=60.0)
    cold = ShareGroup("cold", "Empty", (), (SharePartition("t", 1, None, None),))
    for at, moving in ((0.0, 5), (61.0, 9)):
        groups = (
            ShareGroup("sg", "Stable", MEMBER, (SharePartition("t", 0, 40, 3),)),
            ShareGroup("ok", "Stable", MEMBER, (SharePartition("t", 0, moving, 1),)),
            cold,
        )
        board.record("dev", read(*groups), at)
    return board


def facts(board: ShareBoard) -> ShareFacts:
    return share_facts_of(board.latest()["dev"], 61.0, 30.0)


def test_a_stalled_share_group_is_crit_named_with_partition_and_offset() -> None:
    section = add_share_groups(LAG_OK, facts(stalled_board()), [])
    assert section.status is Status.CRIT
    assert "share group sg is STALLED -> CRIT: t-0: start offset 40 unmoved for 61 s with 3 records waiting" in (
        section.reasons
    )
    assert section.summary.endswith("; 3 share group(s), 1 STALLED")
    detail = {g["group"]: g for g in section.details["share_groups"]}
    assert detail["sg"]["check_status"] == "CRIT" and detail["sg"]["partitions"][0]["start_offset"] == 40
    assert detail["ok"]["check_status"] == "OK"
    assert detail["cold"]["status"] == "UNKNOWN" and detail["cold"]["totallag"] is None  # never 0
    assert section.reasons[0] == LAG_OK.reasons[0]  # the consumer groups' lines stay first


def test_stalled_maps_through_the_stall_rule_and_unknown_is_never_ok() -> None:
    relaxed = [LagCheckStatusMap(pattern="sg", stall="WARN")]
    assert add_share_groups(LAG_OK, facts(stalled_board()), relaxed).status is Status.WARN
    cold = ShareGroupVerdict("cold", "Empty", 0, ShareStatus.UNKNOWN, (), None)
    only_cold = add_share_groups(LAG_OK, ShareFacts("x", (cold,), windowed=True), [])
    assert only_cold.status is Status.UNKNOWN and "share group cold is UNKNOWN -> UNKNOWN" in only_cold.reasons[2]


def test_an_incomplete_or_stale_windowed_read_is_unknown() -> None:
    board = stalled_board()
    board.record("dev", ShareGroupsRead(reason="share groups: KafkaTimeoutError"), 70.0)
    failed = add_share_groups(LAG_OK, share_facts_of(board.latest()["dev"], 70.0, 30.0), [])
    assert failed.status is Status.CRIT  # the previous verdicts are kept: sg is still stalled
    assert "share groups: share groups: KafkaTimeoutError" in failed.reasons
    stale = share_facts_of(board.latest()["dev"], 200.0, 30.0)
    assert stale.groups == () and "is 139 s old (over 30 s)" in stale.reason
    assert add_share_groups(LAG_OK, stale, []).status is Status.UNKNOWN
    assert add_share_groups(LAG_OK, share_facts_of(None, 0.0, 30.0), []).status is Status.UNKNOWN


def test_one_read_judges_nothing_and_keeps_the_lag_it_read() -> None:
    once = from_one_read(
        read(ShareGroup("sg", "Stable", MEMBER, (SharePartition("t", 0, 40, 3), SharePartition("t", 1, None, None))))
    )
    snapshot = Section("lag", Status.INFO, "1 group, 1 read", ("source: one snapshot",))
    section = add_share_groups(snapshot, once, [])
    assert section.status is Status.INFO  # a stall needs a window: never changes the exit code
    (sg,) = section.details["share_groups"]
    assert sg["status"] == "UNKNOWN" and sg["check_status"] == "INFO" and sg["totallag"] == 3
    by_partition = {p["partition"]: p for p in sg["partitions"]}
    assert by_partition[0]["lag"] == 3 and by_partition[0]["reason"].endswith("not judged (one read, no window)")
    assert by_partition[1]["lag"] is None and by_partition[1]["reason"] == "t-1: lag not known"
    assert "share group sg is UNKNOWN: Stable, 1 member(s), lag 3" in section.reasons
    failed = add_share_groups(snapshot, ProbeFailed(FailureKind.TIMEOUT, "no answer"), [])
    assert failed.status is Status.INFO and "share groups: no answer" in failed.reasons


def test_share_groups_not_read_leave_the_section_as_it_was() -> None:
    assert add_share_groups(LAG_OK, NotAvailable("off"), []) is LAG_OK


def test_the_route_json_reads_back_to_the_same_verdict() -> None:
    for verdict in facts(stalled_board()).groups:
        assert verdict_from_json(verdict_json(verdict)) == verdict


def test_the_board_and_api_status_read_the_share_boards_verdicts() -> None:
    board = ShareBoard(stall_after_s=0.0)
    now = datetime.now(UTC).timestamp()
    stuck = read(ShareGroup("sg", "Stable", MEMBER, (SharePartition("t", 0, 40, 3),)))
    board.record("dev", stuck, now - 2)
    board.record("dev", stuck, now - 1)
    check = in_process_check(None, shares=board)
    cluster = ClusterConfig(name="dev", bootstrap_servers=["127.0.0.1:1"])
    lag = {s.name: s for s in check(PulseConfig(), cluster, Deadline.after(4.0))}["lag"]
    assert lag.status is Status.CRIT
    assert any(r.startswith("share group sg is STALLED -> CRIT: t-0") for r in lag.reasons)
    doc = status_document(StatusInputs(datetime.now(UTC), 5.0, shares=board.latest()))
    (row,) = doc["share_groups"]
    assert (row["cluster"], row["group"], row["status"]) == ("dev", "sg", "STALLED")
    assert row["reason"].startswith("t-0: start offset 40 unmoved for 1 s") and row["totallag"] == 3
    assert row["url"] == "/v3/kafka/dev/sharegroup/sg"
    assert status_document(StatusInputs(datetime.now(UTC), 5.0))["share_groups"] is None
    rows = {
        r["group"]: r for r in status_document(StatusInputs(AT, 5.0, shares=stalled_board().latest()))["share_groups"]
    }
    assert (rows["ok"]["partitions"], rows["ok"]["partition_count"]) == ([], 1)  # an OK group's row stays short
    assert [p["status"] for p in rows["cold"]["partitions"]] == ["UNKNOWN"] and rows["cold"]["totallag"] is None


def test_check_lag_url_reads_the_listeners_verdicts_as_judged_there() -> None:
    """`check --lag-url`'s reader against the share-group routes on a real local listener: the verdicts come back
    unchanged (STALLED still named), a listener without them is not available (the section stays as it was)."""
    board = stalled_board()
    served = HttpServer(HttpApp(Router(ShareGroupApi(board).routes(), invalid_request)), "127.0.0.1", 0).start()
    bare = HttpServer(HttpApp(Router([], invalid_request)), "127.0.0.1", 0).start()
    try:
        got = read_listener_shares(served.url, "dev", HttpConfig(), Deadline.after(5.0))
        assert isinstance(got, ShareFacts) and got.windowed and got.reason == ""
        assert {v.group: v for v in got.groups} == {v.group: v for v in board.latest()["dev"].verdicts}
        assert add_share_groups(LAG_OK, got, []).status is Status.CRIT
        off = read_listener_shares(bare.url, "dev", HttpConfig(), Deadline.after(5.0))
        assert isinstance(off, NotAvailable) and "judges no share groups" in off.reason
    finally:
        served.stop()
        bare.stop()


def test_check_lag_url_right_after_the_listener_started_is_unknown_as_on_its_page() -> None:
    """A listener whose first share-group read of the cluster has not finished: `check --lag-url` says UNKNOWN with
    the listener's reason, as the page inside that process does, not "no share groups" (OK)."""
    empty = ShareBoard(stall_after_s=60.0)
    served = HttpServer(HttpApp(Router(ShareGroupApi(empty, ["dev"]).routes(), invalid_request)), "127.0.0.1", 0)
    served.start()
    try:
        got = read_listener_shares(served.url, "dev", HttpConfig(), Deadline.after(5.0))
        assert isinstance(got, ShareFacts) and got.reason == NOT_READ_YET and got.groups == ()
        section = add_share_groups(LAG_OK, got, [])
        assert section.status is Status.UNKNOWN, section
        page = add_share_groups(LAG_OK, share_facts_of(None, 0.0, 60.0), [])
        assert (section.status, page.status) == (Status.UNKNOWN, Status.UNKNOWN)
    finally:
        served.stop()
