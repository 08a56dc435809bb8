"""The new group coordinator's records in `__consumer_offsets` (key versions 3 and up, pure; `records.py` hands
them here): KIP-848 consumer groups (`group.protocol=consumer`), KIP-932 share groups and KIP-1071 streams groups.

Schemas: `common/message/*.json` in the kafka-group-coordinator jar (apache/kafka
`group-coordinator/src/main/resources/common/message/`). Keys are not flexible (int16 version = the record type,
then int16-length strings); values are flexible version 0 (int16 version, compact strings and arrays, tagged
fields). What the lag evaluator needs from them:
- 3 ConsumerGroupMetadata: the group exists and uses the consumer protocol (value: group epoch); a tombstone
  deletes the group.
- 5 ConsumerGroupMemberMetadata (group, member): instance id, rack, client id, client host, ...; a tombstone is
  the member leaving.
- 8 ConsumerGroupCurrentMemberAssignment (group, member): member epoch, previous epoch, state int8, assigned
  partitions and partitions pending revocation as [topic id (uuid), [partition int32]]; the member owns both until
  it acknowledges the revocation. A tombstone clears it.
- 11 ShareGroupMetadata: a share group exists (listed, never judged: it commits no offsets here).
The others (4 partition metadata, 6/7 target assignment, 10/12-15 share, 16 regex, 17-23 streams) are read as far
as their group and counted; target assignments are where the group is heading, the current assignment is who owns
a partition now.
"""

from __future__ import annotations

from dataclasses import dataclass

from pulse.kafka.wire import Reader

TopicIdPartitions = tuple[tuple[bytes, tuple[int, ...]], ...]
"""(topic id, partitions) pairs, as the new coordinator stores assignments: by the topic's 16-byte id."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """A consumer-protocol (KIP-848) group at this group epoch."""

    group: str
    epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTombstone:
    """A consumer-protocol group was deleted."""

    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """A member joined a consumer-protocol group (or its metadata changed)."""

    group: str
    member_id: str
    client_id: str
    client_host: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberLeft:
    """A member left a consumer-protocol group (the tombstone of its metadata)."""

    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupAssignment:
    """The partitions a consumer-protocol member owns now (assigned plus pending revocation), by topic id."""

    group: str
    member_id: str
    partitions: TopicIdPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupAssignmentTombstone:
    """A member's current assignment was deleted (it left)."""

    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupMetadata:
    """A share group (KIP-932) exists: it is listed but never judged (its progress is not a committed offset)."""

    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTombstone:
    group: str


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A new coordinator record the lag evaluator does not need (see the module docstring); counted, not applied."""

    key_version: int
    group: str


NewGroupRecord = (
    ConsumerGroupMetadata
    | ConsumerGroupTombstone
    | ConsumerGroupMember
    | ConsumerGroupMemberLeft
    | ConsumerGroupAssignment
    | ConsumerGroupAssignmentTombstone
    | ShareGroupMetadata
    | ShareGroupTombstone
    | GroupRecord
)

_OTHER_KEYS = frozenset({4, 6, 7, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23})
"""Key versions of the new coordinator (apache/kafka 4.3 `CoordinatorRecordType`) read only for their group."""
KNOWN_KEYS = frozenset({3, 5, 8, 11}) | _OTHER_KEYS


class UnsupportedValue(Exception):
    """A value version this reader does not know (every schema here is at version 0)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"value version {version}")
        self.version = version


def decode_group_record(key_version: int, key: Reader, value: bytes | None) -> NewGroupRecord:
    """One record of a key version in `KNOWN_KEYS`, `key` positioned after its version. Raises `wire.Truncated`
    (or `struct.error`) on malformed bytes and `UnsupportedValue` on a value version other than 0."""
    group = key.string()
    if key_version == 3:
        if not value:
            return ConsumerGroupTombstone(group)
        reader = _value(value)
        return ConsumerGroupMetadata(group, reader.int32())
    if key_version == 5:
        member_id = key.string()
        if not value:
            return ConsumerGroupMemberLeft(group, member_id)
        reader = _value(value)
        reader.compact_string()  # instance id
        reader.compact_string()  # rack id
        client_id = reader.compact_string() or ""
        client_host = reader.compact_string() or ""
        return ConsumerGroupMember(group, member_id, client_id, client_host)
    if key_version == 8:
        member_id = key.string()
        if not value:
            return ConsumerGroupAssignmentTombstone(group, member_id)
        reader = _value(value)
        reader.int32()  # member epoch
        reader.int32()  # previous member epoch
        reader.int8()  # member state
        owned = _topic_partitions(reader) + _topic_partitions(reader)  # assigned, then pending revocation
        return ConsumerGroupAssignment(group, member_id, owned)
    if key_version == 11:
        return ShareGroupMetadata(group) if value else ShareGroupTombstone(group)
    return GroupRecord(key_version, group)


def _value(value: bytes) -> Reader:
    reader = Reader(value)
    version = reader.int16()
    if version != 0:
        raise UnsupportedValue(version)
    return reader


def _topic_partitions(reader: Reader) -> TopicIdPartitions:
    """[TopicPartitions]: topic id, [int32] partitions, tagged fields (the assignment epochs)."""
    out = []
    for _ in range(reader.compact_array_length()):
        topic_id = reader.uuid()
        partitions = tuple(reader.int32() for _ in range(reader.compact_array_length()))
        reader.tagged_fields()
        out.append((topic_id, partitions))
    return tuple(out)
