"""The new group coordinator's `__consumer_offsets` records (KIP-848 consumer groups, share groups): decoded from
bytes a real Kafka 4.3.1 broker wrote (kafka_4_3_group_records.json) and from hand-built records, and turned into
owners and member counts (members.py, the store, the `__consumer_offsets` reader's ingest) as classic group
metadata is."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from lag.ingest.coordinator_records import (
    ConsumerGroupAssignment,
    ConsumerGroupAssignmentTombstone,
    ConsumerGroupMember,
    ConsumerGroupMemberLeft,
    ConsumerGroupMetadata,
    ConsumerGroupTombstone,
    GroupRecord,
    ShareGroupMetadata,
    ShareGroupTombstone,
)
from lag.ingest.members import ConsumerGroupMembers
from lag.ingest.offsets_topic import OffsetsTopicReader
from lag.ingest.records import (
    GroupMetadata,
    OffsetCommit,
    Undecodable,
    UnknownRecord,
    decode_record,
    decode_record_general,
)
from lag.service import LagService
from lag.store.freshness import SourceHealth
from lag.store.offsets import OffsetStore
from pulse.config import LagConfig

CAPTURED = json.loads((Path(__file__).parent / "kafka_4_3_group_records.json").read_text())
T1 = bytes.fromhex("9b04f5fee22a4eac86ccf8cbd7a85b33")
TOPIC_NAMES = {bytes.fromhex(k): v for k, v in CAPTURED["topic_ids"].items()}


def captured(partition: int | None = None) -> list[tuple[bytes | None, bytes | None]]:
    return [
        (bytes.fromhex(key), bytes.fromhex(value) if value else None)
        for p, _, key, value in CAPTURED["records"]
        if partition is None or p == partition
    ]


def s16(text: str) -> bytes:
    return struct.pack(">h", len(text.encode())) + text.encode()


def compact(text: str | None) -> bytes:
    return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()


def member_value(client_id: str, host: str, instance: str | None = None, rack: str | None = None) -> bytes:
    out = struct.pack(">h", 0) + compact(instance) + compact(rack) + compact(client_id) + compact(host)
    out += b"\x02" + compact("t") + compact(None) + struct.pack(">i", 300_000) + compact("uniform")
    return out + b"\x00"


def topic_partitions(entries: list[tuple[bytes, list[int]]]) -> bytes:
    out = bytes([len(entries) + 1])
    for topic_id, partitions in entries:
        out += topic_id + bytes([len(partitions) + 1]) + b"".join(struct.pack(">i", p) for p in partitions) + b"\x00"
    return out


def assignment_value(assigned: list[tuple[bytes, list[int]]], pending: list[tuple[bytes, list[int]]]) -> bytes:
    head = struct.pack(">hiib", 0, 7, 6, 0)
    return head + topic_partitions(assigned) + topic_partitions(pending) + b"\x00"


def key(version: int, group: str, member: str | None = None) -> bytes:
    return struct.pack(">h", version) + s16(group) + (s16(member) if member is not None else b"")


# -- decoding real bytes ------------------------------------------------------------------------------------------


def test_every_captured_record_is_read_none_is_unknown() -> None:
    records = [decode_record(k, v) for k, v in captured()]
    assert not [r for r in records if isinstance(r, UnknownRecord | Undecodable)], records
    kinds = {type(r).__name__ for r in records}
    assert {"ConsumerGroupMember", "ConsumerGroupAssignment", "ConsumerGroupMemberLeft", "ShareGroupMetadata"} <= kinds


def test_captured_consumer_protocol_group_joins_commits_and_leaves() -> None:
    records = [decode_record(k, v) for k, v in captured(4)]
    member_id = "EGA9WdyISGufhEsFtXcf+Q"
    assert records[:2] == [
        ConsumerGroupMember("g-new", member_id, "cli-new", "/127.0.0.1"),
        ConsumerGroupMetadata("g-new", 2),
    ]
    assert records[2:4] == [GroupRecord(7, "g-new"), GroupRecord(6, "g-new")]  # target assignment: not needed
    assert records[4] == ConsumerGroupAssignment("g-new", member_id, ((T1, (0, 1)),))
    assert isinstance(records[5], OffsetCommit) and records[5].offset == 10  # its commits are ordinary commits
    assert records[6:] == [
        ConsumerGroupAssignmentTombstone("g-new", member_id),
        GroupRecord(7, "g-new"),
        ConsumerGroupMemberLeft("g-new", member_id),
        ConsumerGroupMetadata("g-new", 3),  # the group stays (empty) after its last member left
    ]


def test_captured_classic_group_and_share_group() -> None:
    classic = [decode_record(k, v) for k, v in captured(5)]
    assert isinstance(classic[1], GroupMetadata) and classic[1].members[0].client_id == "cli-old"
    share = [decode_record(k, v) for k, v in captured(3)]
    assert ShareGroupMetadata("g-share") in share
    assert {r.key_version for r in share if isinstance(r, GroupRecord)} == {10, 12, 13, 14, 15}


def test_captured_records_rebuild_owners_then_clear_them() -> None:
    members = ConsumerGroupMembers()
    records = [decode_record(k, v) for k, v in captured(4)]
    for record in records[:6]:
        if isinstance(record, ConsumerGroupMember | ConsumerGroupAssignment):
            members.apply(record)
    owners, unresolved = members.owners("g-new", TOPIC_NAMES)
    assert owners == {("t1", 0): ("/127.0.0.1", "cli-new"), ("t1", 1): ("/127.0.0.1", "cli-new")}
    assert unresolved == set() and members.member_count("g-new") == 1
    for record in records[6:]:
        if isinstance(record, ConsumerGroupAssignmentTombstone | ConsumerGroupMemberLeft):
            members.apply(record)
    assert members.owners("g-new", TOPIC_NAMES) == ({}, set())
    assert members.member_count("g-new") == 0


# -- hand-built records -------------------------------------------------------------------------------------------


def test_member_with_instance_and_rack() -> None:
    record = decode_record(key(5, "g", "m-1"), member_value("app", "/10.0.0.1", instance="i-1", rack="az-a"))
    assert record == ConsumerGroupMember("g", "m-1", "app", "/10.0.0.1")


def test_partitions_pending_revocation_are_still_owned() -> None:
    other = bytes(range(16))
    record = decode_record(key(8, "g", "m-1"), assignment_value([(T1, [0, 2]), (other, [5])], [(T1, [1])]))
    assert record == ConsumerGroupAssignment("g", "m-1", ((T1, (0, 2)), (other, (5,)), (T1, (1,))))


@pytest.mark.parametrize(
    ("version", "member", "want"),
    [
        (3, None, ConsumerGroupTombstone("g")),
        (5, "m", ConsumerGroupMemberLeft("g", "m")),
        (8, "m", ConsumerGroupAssignmentTombstone("g", "m")),
        (11, None, ShareGroupTombstone("g")),
        (7, "m", GroupRecord(7, "g")),
    ],
)
def test_tombstones(version: int, member: str | None, want: Any) -> None:
    assert decode_record(key(version, "g", member), None) == want


def test_unknown_value_version_and_key_version_are_reported_not_guessed() -> None:
    assert decode_record(key(5, "g", "m"), struct.pack(">h", 1) + b"\x00" * 20) == UnknownRecord(5, 1)
    assert decode_record(key(99, "g"), b"\x00\x00") == UnknownRecord(99, 0)


@pytest.mark.parametrize("cut", [1, 3, 9, 12, 20, 30])
def test_truncated_assignment_is_undecodable(cut: int) -> None:
    value = assignment_value([(T1, [0, 1])], [])
    record = decode_record(key(8, "g", "m"), value[:cut])
    assert isinstance(record, Undecodable) and "key version 8" in record.reason


def test_mutated_captured_records_never_crash() -> None:
    rng = random.Random(848)
    seeds = [(k, v) for k, v in captured() if k and v and k[1] >= 3]
    kinds: dict[str, int] = {}
    for _ in range(5_000):
        seed_key, seed_value = rng.choice(seeds)
        value = bytearray(seed_value or b"")
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.5:
                value[rng.randrange(len(value))] = rng.randrange(256)
            else:
                del value[rng.randrange(len(value)) :]
                if not value:
                    value = bytearray(b"\x00")
        record = decode_record(seed_key, bytes(value))
        assert record == decode_record_general(seed_key, bytes(value))
        kinds[type(record).__name__] = kinds.get(type(record).__name__, 0) + 1
    assert kinds.get("Undecodable", 0) > 100 and len(kinds) > 3, kinds


def test_an_unresolved_topic_id_is_reported() -> None:
    members = ConsumerGroupMembers()
    members.apply(ConsumerGroupMember("g", "m", "c", "/h"))
    members.apply(ConsumerGroupAssignment("g", "m", ((T1, (0,)), (b"\x01" * 16, (3,)))))
    owners, unresolved = members.owners("g", TOPIC_NAMES)
    assert owners == {("t1", 0): ("/h", "c")} and unresolved == {b"\x01" * 16}


# -- into the store -----------------------------------------------------------------------------------------------


def test_store_keeps_owners_until_the_first_commit_and_counts_members() -> None:
    store = OffsetStore(group_deny="^skip")
    store.set_owner("c", "g", "t1", 0, "/h", "cli")  # the member joined before it committed
    store.set_owner("c", "skip-me", "t1", 0, "/h", "cli")
    store.set_members("c", "g", 2)
    store.add_hwm("c", "t1", 0, 100, 1_000)
    store.add_commit("c", "g", "t1", 0, 50, 1_000, 1_000)
    store.add_commit("c", "skip-me", "t1", 0, 50, 1_000, 1_000)
    assert [(s.owner, s.client_id) for s in store.slots("c", "g")] == [("/h", "cli")]
    assert store.members("c", "g") == 2 and store.members("c", "other") is None
    store.set_share_group("c", "sg", True)
    store.set_share_group("c", "skip-sg", True)
    assert store.share_groups("c") == ["sg"]
    store.set_share_group("c", "sg", False)
    assert store.share_groups("c") == []
    store.delete_group("c", "g")
    assert store.members("c", "g") is None


def test_source_ingest_of_captured_bytes_gives_owners_members_and_share_groups() -> None:
    health = SourceHealth(stale_after_s=30, recovery_s=0)
    service = LagService(LagConfig(intervals=3), health)
    source = OffsetsTopicReader("c", {}, service, health)  # ingest() alone: no Kafka is contacted
    source.topic_names = TOPIC_NAMES  # what poll_hwms reads with DescribeTopics
    with service.locked() as store:
        for p in (0, 1):
            store.add_hwm("c", "t1", p, 20, service.clock_ms())
    g_new = captured(4)
    source.ingest(captured(5)[:2] + g_new[:6] + captured(3))  # g-old joined; g-new joined and committed
    store = service.store
    assert {(s.topic, s.partition): (s.owner, s.client_id) for s in store.slots("c", "g-new")} == {
        ("t1", 0): ("/127.0.0.1", "cli-new"),
        ("t1", 1): ("/127.0.0.1", "cli-new"),
    }
    assert store.members("c", "g-new") == 1 and store.members("c", "g-old") == 1
    assert store.share_groups("c") == ["g-share"] and "g-share" not in store.groups("c")
    source.ingest(captured(5)[2:] + g_new[6:])  # both groups' members leave
    assert store.members("c", "g-new") == 0 and store.members("c", "g-old") == 0
    assert {s.owner for s in store.slots("c", "g-new")} == {""}
    assert source.decoded.get("UnknownRecord", 0) == 0 and source.decoded.get("Undecodable", 0) == 0


UPGRADE = json.loads((Path(__file__).parent / "kafka_4_3_group_upgrade.json").read_text())


def test_captured_protocol_upgrade_keeps_the_groups_commits_and_deletion_removes_them() -> None:
    """An online upgrade (a consumer-protocol member joins a classic group) writes a GroupMetadata tombstone but
    keeps the offsets: the window must survive it, and the owner move to the new member. DeleteGroups writes the
    offset tombstone first, then the group's: the group is gone, members included."""
    records: list[tuple[bytes | None, bytes | None]] = [
        (bytes.fromhex(k), bytes.fromhex(v) if v else None) for _, _, k, v in UPGRADE["records"]
    ]
    kinds = [type(decode_record(k, v)).__name__ for k, v in records]
    health = SourceHealth(stale_after_s=30, recovery_s=0)
    service = LagService(LagConfig(intervals=3), health)
    source = OffsetsTopicReader("c", {}, service, health)
    source.topic_names = {bytes.fromhex(k): v for k, v in UPGRADE["topic_ids"].items()}
    with service.locked() as store:
        store.add_hwm("c", "m1", 0, 10, service.clock_ms())
    store = service.store
    tombstone = kinds.index("GroupTombstone")
    source.ingest(records[: tombstone + 1])
    assert store.commits.read(next(store.slots("c", "g-mig")).slot)[0] == [1]  # the classic commit survives
    second_commit = kinds.index("OffsetCommit", tombstone)
    source.ingest(records[tombstone + 1 : second_commit + 1])
    slot = next(store.slots("c", "g-mig"))
    assert store.commits.read(slot.slot)[0] == [1, 2]
    assert (slot.owner, slot.client_id) == ("/127.0.0.1", "new") and store.members("c", "g-mig") == 1
    source.ingest(records[second_commit + 1 :])  # new leaves; DeleteGroups
    assert store.groups("c") == [] and store.members("c", "g-mig") is None
