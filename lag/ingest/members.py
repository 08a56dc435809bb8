"""Who is in a consumer-protocol (KIP-848) group and what each member owns, rebuilt from the new coordinator's
records (pure; `offsets_topic.py` feeds it decoded records and turns its answers into the store's owners and member
counts). Classic groups carry all of this in one GroupMetadata record; consumer-protocol groups spread it over a
record per member (client id and host) and one per member's current assignment (partitions by topic id), each
deleted by its own tombstone when the member leaves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lag.ingest.coordinator_records import (
    ConsumerGroupAssignment,
    ConsumerGroupAssignmentTombstone,
    ConsumerGroupMember,
    ConsumerGroupMemberLeft,
    TopicIdPartitions,
)

MemberRecord = (
    ConsumerGroupMember | ConsumerGroupMemberLeft | ConsumerGroupAssignment | ConsumerGroupAssignmentTombstone
)
Owners = dict[tuple[str, int], tuple[str, str]]
"""(topic, partition) -> (client host, client id), the store's owner shape (Burrow's owner and client_id)."""


@dataclass
class _Group:
    members: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Member id -> (client host, client id)."""
    owned: dict[str, TopicIdPartitions] = field(default_factory=dict)
    """Member id -> its current assignment."""


class ConsumerGroupMembers:
    """The members and current assignments of one cluster's consumer-protocol groups."""

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}

    def apply(self, record: MemberRecord) -> str:
        """Apply one member record; returns its group (whose owners and member count may have changed)."""
        group = self._groups.setdefault(record.group, _Group())
        if isinstance(record, ConsumerGroupMember):
            group.members[record.member_id] = (record.client_host, record.client_id)
        elif isinstance(record, ConsumerGroupMemberLeft):
            group.members.pop(record.member_id, None)
        elif isinstance(record, ConsumerGroupAssignment):
            group.owned[record.member_id] = record.partitions
        else:
            group.owned.pop(record.member_id, None)
        if not group.members and not group.owned:
            del self._groups[record.group]
        return record.group

    def forget(self, group: str) -> None:
        """The group was deleted."""
        self._groups.pop(group, None)

    def member_count(self, group: str) -> int:
        found = self._groups.get(group)
        return len(found.members) if found is not None else 0

    def owners(self, group: str, topic_names: Mapping[bytes, str]) -> tuple[Owners, set[bytes]]:
        """The group's owners with topic ids resolved through `topic_names`, and the ids it could not resolve
        (a topic created since the names were read). A member whose metadata is not read yet owns its partitions
        with an empty host and client id."""
        found = self._groups.get(group)
        owners: Owners = {}
        unresolved: set[bytes] = set()
        if found is None:
            return owners, unresolved
        for member_id, assignment in sorted(found.owned.items()):
            host, client_id = found.members.get(member_id, ("", ""))
            for topic_id, partitions in assignment:
                topic = topic_names.get(topic_id)
                if topic is None:
                    unresolved.add(topic_id)
                    continue
                for partition in partitions:
                    owners[(topic, partition)] = (host, client_id)
        return owners, unresolved
