"""Admin API ingestion: which polled offsets become commits, so that the rules see a stalled
group as STALL and a stopped one as STOP although the mode has no commit events; and groups Kafka no longer lists
are forgotten. No Kafka here: polls are given as snapshots."""

from __future__ import annotations

import pytest

from lag.ingest.admin_clients import AdminClients
from lag.ingest.admin_source import (
    GROUP_OFFSETS_FEED,
    AdminOffsetsReader,
    GroupSnapshot,
    commits_to_store,
    should_store,
)
from lag.protocol import Status
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig
from pulse.kafka.group_offsets import GroupOffsetsReader


@pytest.mark.parametrize(
    ("previous", "offset", "active", "want"),
    [
        pytest.param(None, 10, False, True, id="first-sight: stored"),
        pytest.param(10, 12, False, True, id="moved: someone committed"),
        pytest.param(10, 8, True, True, id="moved-back: a rewind is a commit too"),
        pytest.param(10, 10, True, True, id="unchanged-with-members: live consumers, STALL can be seen"),
        pytest.param(10, 10, False, False, id="unchanged-no-members: nothing committed, STOP can be seen"),
    ],
)
def test_should_store(previous: int | None, offset: int, active: bool, want: bool) -> None:
    assert should_store(previous, offset, active) is want


def test_commits_to_store_in_partition_order() -> None:
    snap = GroupSnapshot("g", False, {("t", 1): 5, ("t", 0): 7, ("u", 0): 3}, {})
    assert commits_to_store({("t", 0): 7, ("t", 1): 4}, snap) == [(("t", 1), 5), (("u", 0), 3)]


class Clock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


def reader_with_service(mode: str = "burrow") -> tuple[AdminOffsetsReader, LagService, Clock]:
    clock = Clock()
    health = SourceHealth(stale_after_s=30, recovery_s=0, clock_ms=clock)
    service = LagService(LagConfig(mode=mode, intervals=3, offset_refresh_s=10), health, clock)  # type: ignore[arg-type]
    # apply() never calls Kafka, and a GroupOffsetsReader connects to nothing until it reads
    reader = AdminOffsetsReader("c", AdminClients(lambda: None), GroupOffsetsReader({}), service, health)
    return reader, service, clock


def run(reader: AdminOffsetsReader, service: LagService, clock: Clock, hwm: int, snap: GroupSnapshot) -> None:
    """One poll 10 s after the previous: a HWM round then the group offsets round."""
    clock.now_ms += 10_000
    with service.locked() as store:
        store.add_hwm("c", "t", 0, hwm, clock.now_ms)
    assert reader.health is not None
    reader.health.mark_ok("c")
    reader.apply({snap.group}, [snap], clock.now_ms)
    reader.health.mark_ok("c", GROUP_OFFSETS_FEED)


def test_a_live_group_stuck_on_one_offset_is_stall() -> None:
    reader, service, clock = reader_with_service()
    for hwm in (100, 200, 300, 400):
        run(reader, service, clock, hwm, GroupSnapshot("g", True, {("t", 0): 50}, {("t", 0): ("/10.0.0.1", "c-1")}))
    verdict = service.group_status("c", "g").partitions[0]
    assert verdict.status is Status.STALL, verdict.reason
    assert (verdict.owner, verdict.client_id) == ("/10.0.0.1", "c-1")


def test_a_group_whose_members_left_is_stop() -> None:
    reader, service, clock = reader_with_service()
    for i, hwm in enumerate((100, 200, 300)):
        run(reader, service, clock, hwm, GroupSnapshot("g", True, {("t", 0): 60 + 10 * i}, {}))
    for hwm in (400, 500, 600, 700):  # consumers gone: the offset stays, nothing is stored
        run(reader, service, clock, hwm, GroupSnapshot("g", False, {("t", 0): 80}, {}))
    assert service.group_status("c", "g").partitions[0].status is Status.STOP


def test_a_caught_up_group_is_ok() -> None:
    reader, service, clock = reader_with_service("enhanced")
    for hwm in (100, 200, 300, 400):
        run(reader, service, clock, hwm, GroupSnapshot("g", True, {("t", 0): hwm}, {}))
    assert service.group_status("c", "g").status is Status.OK


def test_groups_kafka_no_longer_lists_are_forgotten() -> None:
    reader, service, clock = reader_with_service()
    run(reader, service, clock, 100, GroupSnapshot("g", True, {("t", 0): 50}, {}))
    reader.apply(set(), [], clock.now_ms)
    assert service.store.groups("c") == []


def test_a_group_skipped_this_round_is_kept() -> None:
    reader, service, clock = reader_with_service()
    run(reader, service, clock, 100, GroupSnapshot("g", True, {("t", 0): 50}, {}))
    reader.apply({"g"}, [], clock.now_ms)  # listed, but its fetch failed with a per-group error
    assert service.store.groups("c") == ["g"]


def test_the_cluster_is_unknown_until_group_offsets_were_read() -> None:
    reader, service, _clock = reader_with_service()
    with service.locked() as store:
        store.add_hwm("c", "t", 0, 100, 0)
        store.add_commit("c", "g", "t", 0, 50, 0, 0)
    reader.health.mark_ok("c")
    status = service.group_status("c", "g")
    assert status.status is Status.UNKNOWN and "no group-offsets read yet" in status.reason


def test_member_counts_and_owners_follow_the_polls() -> None:
    """DescribeConsumerGroups answers classic and consumer-protocol groups alike: members and owners while the group
    has members, 0 members and no owners once they left."""
    reader, service, clock = reader_with_service()
    owners = {("t", 0): ("/10.0.0.1", "app")}
    run(reader, service, clock, 100, GroupSnapshot("g", True, {("t", 0): 50}, owners, members=2))
    assert service.store.members("c", "g") == 2
    assert [(s.owner, s.client_id) for s in service.store.slots("c", "g")] == [("/10.0.0.1", "app")]
    run(reader, service, clock, 110, GroupSnapshot("g", False, {("t", 0): 50}, {}, members=0))
    assert service.store.members("c", "g") == 0
    assert [(s.owner, s.client_id) for s in service.store.slots("c", "g")] == [("", "")]
