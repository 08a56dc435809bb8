"""Streams-group answers parsed and judged without a broker: NOT_READY and members on an older topology epoch are
flagged, errors name the group, bounds hold, and our wire schema round-trips through kafka-python's classes."""

from __future__ import annotations

from typing import Any

from pulse.kafka import streams_groups
from pulse.kafka.streams_groups import (
    MAX_NAME_CHARS,
    StreamsGroup,
    StreamsMember,
    StreamsStatus,
    describe_messages,
    merge,
    parse_describe,
)


def member(member_id: str, topology_epoch: int, partitions: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    tasks = [{"subtopology_id": "0", "partitions": list(partitions)}]
    return {
        "member_id": member_id, "member_epoch": 7, "client_id": "wc-1", "client_host": "/10.0.0.1",
        "topology_epoch": topology_epoch, "process_id": "p1", "is_classic": False,
        "assignment": {"active_tasks": tasks, "standby_tasks": [], "warmup_tasks": []},
    }  # fmt: skip


def group(state: str = "Stable", topology: dict[str, Any] | None = None, *members: dict[str, Any]) -> dict[str, Any]:
    return {
        "group_id": "wc", "error_code": 0, "group_state": state, "group_epoch": 4, "assignment_epoch": 4,
        "topology": topology, "members": list(members),
    }  # fmt: skip


TOPOLOGY = {
    "epoch": 2,
    "subtopologies": [
        {"subtopology_id": "0", "source_topics": ["in"], "repartition_source_topics": []},
        {"subtopology_id": "1", "source_topics": [], "repartition_source_topics": [{"name": "wc-repartition"}]},
    ],
}


def test_a_stable_group_with_its_epochs_members_and_source_topics() -> None:
    (parsed,) = parse_describe({"groups": [group("Stable", TOPOLOGY, member("m1", 2, (0, 1, 2)))]}).values()
    assert parsed == StreamsGroup(
        "wc", "Stable", 4, 4, 2, (StreamsMember("m1", "wc-1", "/10.0.0.1", "p1", 7, 2, 3),), ("in", "wc-repartition")
    )
    assert parsed.status is StreamsStatus.OK and parsed.reason() == ""


def test_not_ready_is_flagged_whatever_the_members_say() -> None:
    uninitialised = parse_describe({"groups": [group("NotReady", None)]})["wc"]
    with_member = parse_describe({"groups": [group("NotReady", {"epoch": 0, "subtopologies": None}, member("m", 0))]})
    for g in (uninitialised, with_member["wc"]):
        assert g.not_ready and g.status is StreamsStatus.NOT_READY
        assert g.reason() == "wc: NOT_READY, topics its topology needs are missing (no task runs)"
    assert uninitialised.topology_epoch is None and uninitialised.source_topics == ()
    assert StreamsGroup("wc", "NOT_READY").not_ready and not StreamsGroup("wc", "Stable").not_ready


def test_members_behind_the_groups_topology_epoch_are_named() -> None:
    answer = {"groups": [group("Reconciling", TOPOLOGY, member("old", 1), member("new", 2))]}
    parsed = parse_describe(answer)["wc"]
    assert [m.member_id for m in parsed.stale_members] == ["old"]
    assert parsed.status is StreamsStatus.STALE_TOPOLOGY
    assert parsed.reason() == "wc: 1 member(s) on a topology epoch below 2: old"
    assert not StreamsGroup("wc", "Stable", members=parsed.members).stale_members  # no group epoch: nothing stale


def test_errors_name_the_group_and_missing_groups_say_so() -> None:
    failed = parse_describe({"groups": [{"group_id": "h", "error_code": 69, "error_message": "gone"}]})["h"]
    assert failed.state == "Unknown" and failed.status is StreamsStatus.UNKNOWN
    assert failed.reason() == "h: describe error 69: gone"
    assert [(g.group, g.error) for g in merge(["h", "x"], {"h": failed})] == [
        ("h", "describe error 69: gone"),
        ("x", "not described"),
    ]


def test_untrusted_names_and_sizes_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(streams_groups, "MAX_MEMBERS", 2)
    answer = {"groups": [{**group("Stable", TOPOLOGY, *(member(f"m{i}", 2) for i in range(5))), "group_id": "x" * 999}]}
    ((name, parsed),) = parse_describe(answer).items()
    assert len(name) == MAX_NAME_CHARS and len(parsed.members) == 2


def test_our_schema_round_trips_through_kafka_python() -> None:
    """The request encodes as v0's wire layout; an answer with a topology and a member decodes to the same group."""
    request_class, response_class = describe_messages()
    request = request_class(group_ids=["g"], include_authorized_operations=False, version=0)
    assert request.encode().hex() == "0202670000"  # 1 group, "g", false, tagged fields
    described = response_class.DescribedGroup
    sub = described.Topology.Subtopology(
        subtopology_id="0", source_topics=["in"], repartition_sink_topics=[], state_changelog_topics=[],
        repartition_source_topics=[], version=0,
    )  # fmt: skip
    m = described.Member
    tasks = m.Assignment.TaskIds(subtopology_id="0", partitions=[0, 1], version=0)
    assignment = m.Assignment(active_tasks=[tasks], standby_tasks=[], warmup_tasks=[], version=0)
    empty = m.Assignment(active_tasks=[], standby_tasks=[], warmup_tasks=[], version=0)
    one = m(
        member_id="m1", member_epoch=3, instance_id=None, rack_id=None, client_id="c", client_host="/h",
        topology_epoch=1, process_id="p", user_endpoint=None, client_tags=[], task_offsets=[], task_end_offsets=[],
        assignment=assignment, target_assignment=empty, is_classic=False, version=0,
    )  # fmt: skip
    body = described(
        error_code=0, error_message=None, group_id="g", group_state="Stable", group_epoch=5, assignment_epoch=5,
        topology=described.Topology(epoch=1, subtopologies=[sub], version=0), members=[one],
        authorized_operations=-2147483648, version=0,
    )  # fmt: skip
    answer = response_class(throttle_time_ms=0, groups=[body], version=0)
    decoded = response_class.decode(answer.encode(), version=0)
    assert parse_describe(decoded.to_dict())["g"] == StreamsGroup(
        "g", "Stable", 5, 5, 1, (StreamsMember("m1", "c", "/h", "p", 3, 1, 2),), ("in",)
    )
