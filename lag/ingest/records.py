"""Decoding of `__consumer_offsets` records into small typed messages (pure; `offsets_topic.py` feeds it raw bytes).

Formats (apache/kafka `group-coordinator/src/main/resources/common/message/*.json`), big-endian,
key and value each start with an int16 version:
- key v0/v1 OffsetCommitKey: group, topic (int16-length strings), partition int32; key v2 GroupMetadataKey: group;
  keys >= 3 are the new coordinator's records (KIP-848 consumer groups, share and streams groups), read by
  `coordinator_records.py`; a key version nobody defined is counted as unknown and skipped.
- OffsetCommitValue v0: offset int64, metadata string, commit_ts int64; v1 adds expire_ts int64; v2 = v0's fields;
  v3: offset, leader_epoch int32, metadata, commit_ts; v4 (Kafka 4.1, first flexible version): as v3 with a compact
  string (unsigned varint length + 1) and trailing tagged fields.
- GroupMetadataValue v0-v3: protocol_type, generation int32, protocol, leader (nullable strings), v2+ state
  timestamp int64, members[int32 count]: member_id, v3+ group_instance_id (nullable), client_id, client_host,
  v1+ rebalance_timeout int32, session_timeout int32, subscription bytes, assignment bytes.
- An empty (null) value is a tombstone: for an offset key the committed offset is deleted, for a group key the group.
Nothing here raises on bad input: a record that cannot be decoded becomes `Undecodable` with the reason.

Speed: nearly every record is an offset commit of one shape (key v1, value v3 or v4, short metadata), so
`decode_record` first tries `commit_fields`, which reads that shape with precompiled `struct` unpacks and bounds
checks and no reader object; anything else, malformed input included, goes to the general decoder, which gives the
same answer for every record the fast path accepts (tests/unit/lag/ingest/test_records.py holds them equal). The
`__consumer_offsets` reader takes `commit_fields`' plain tuple as it is: building a frozen dataclass per commit was
a tenth of a commit's CPU in `kafka-pulse lag` (docs/benchmarks.md, CPU per commit).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from lag.ingest.coordinator_records import KNOWN_KEYS, NewGroupRecord, UnsupportedValue, decode_group_record
from pulse.kafka.wire import Reader as _Reader
from pulse.kafka.wire import Truncated as _Truncated


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    group: str
    topic: str
    partition: int
    offset: int
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class OffsetTombstone:
    """The committed offset of one group-partition was deleted (expiry or DeleteConsumerGroupOffsets)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, tuple[int, ...]], ...]
    """(topic, partitions) assigned by the consumer protocol; empty when the group is not a `consumer` group or the
    assignment could not be read."""


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    group: str
    protocol_type: str
    generation: int
    members: tuple[Member, ...]


@dataclass(frozen=True, slots=True)
class GroupTombstone:
    """The group was deleted."""

    group: str


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record kind we do not read (a key version Kafka 4.3 does not define, or an unsupported value version);
    counted and skipped."""

    key_version: int
    value_version: int | None


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Bytes that do not parse as their version says; counted and skipped."""

    reason: str


Record = OffsetCommit | OffsetTombstone | GroupMetadata | GroupTombstone | UnknownRecord | Undecodable | NewGroupRecord


_UNPACK_INT32 = struct.Struct(">i").unpack_from
_UNPACK_INT64 = struct.Struct(">q").unpack_from
_UNPACK_V0_HEAD = struct.Struct(">hqh").unpack_from
"""Offset value v0-v2: version, offset, metadata length."""
_UNPACK_V3_HEAD = struct.Struct(">hqih").unpack_from
"""Offset value v3: version, offset, leader epoch, metadata length."""


CommitFields = tuple[str, str, int, int, int]
"""An offset commit's fields in `OffsetCommit`'s order (group, topic, partition, offset, commit_timestamp_ms)."""


def decode_record(key: bytes | None, value: bytes | None) -> Record:
    """Decode one `__consumer_offsets` record; never raises."""
    fields = commit_fields(key, value)
    return OffsetCommit(*fields) if fields is not None else decode_record_general(key, value)


def offset_commit_fast(key: bytes | None, value: bytes | None) -> OffsetCommit | None:
    """`commit_fields` as an `OffsetCommit`."""
    fields = commit_fields(key, value)
    return OffsetCommit(*fields) if fields is not None else None


def commit_fields(key: bytes | None, value: bytes | None) -> CommitFields | None:
    """The fields of an offset commit with key v0/v1 and value v0-v4 whose strings and varints are short; None for
    any other record, which the general decoder then reads (and, if malformed, reports)."""
    if not key or not value:
        return None
    key_end, value_end = len(key), len(value)
    if key_end < 10 or key[0] or key[1] > 1 or value_end < 12 or value[0]:
        return None
    group_end = 4 + (key[2] << 8 | key[3])  # a length >= 0x8000 is negative: refused below
    topic_end = group_end + 2 + (key[group_end] << 8 | key[group_end + 1]) if group_end + 2 <= key_end else key_end
    if key[2] & 0x80 or topic_end + 4 > key_end or key[group_end] & 0x80:
        return None
    version = value[1]
    if version == 3:
        if value_end < 16:
            return None
        _, offset, _, metadata_len = _UNPACK_V3_HEAD(value)
        ts_at = 16 + metadata_len if metadata_len >= 0 else value_end
    elif version == 4:
        if value_end < 15 or value[14] & 0x80:  # a compact length of one byte
            return None
        offset = _UNPACK_INT64(value, 2)[0]
        ts_at = 15 + max(value[14] - 1, 0)
        if ts_at + 9 > value_end or value[ts_at + 8]:  # and no tagged fields
            return None
    elif version <= 2:
        _, offset, metadata_len = _UNPACK_V0_HEAD(value)
        ts_at = 12 + metadata_len if metadata_len >= 0 else value_end
    else:
        return None
    if ts_at + 8 > value_end:  # also a negative metadata length, which set ts_at to the end
        return None
    return (
        key[4:group_end].decode("utf-8", "replace"),
        key[group_end + 2 : topic_end].decode("utf-8", "replace"),
        _UNPACK_INT32(key, topic_end)[0],
        offset,
        _UNPACK_INT64(value, ts_at)[0],
    )


def decode_record_general(key: bytes | None, value: bytes | None) -> Record:
    """Decode any `__consumer_offsets` record through a reader; never raises."""
    if not key or len(key) < 2:
        return Undecodable("key shorter than its version")
    reader = _Reader(key)
    key_version = reader.int16()  # two bytes are there
    try:
        if key_version in (0, 1):
            group, topic, partition = reader.string(), reader.string(), reader.int32()
            if not value:
                return OffsetTombstone(group, topic, partition)
            return _offset_value(group, topic, partition, value, key_version)
        if key_version == 2:
            group = reader.string()
            if not value:
                return GroupTombstone(group)
            return _group_value(group, value, key_version)
        if key_version in KNOWN_KEYS:
            return decode_group_record(key_version, reader, value)
        return UnknownRecord(key_version, _peek_version(value))
    except UnsupportedValue as exc:
        return UnknownRecord(key_version, exc.version)
    except (_Truncated, struct.error) as exc:
        return Undecodable(f"key: {exc}" if key_version < 3 else f"record of key version {key_version}: {exc}")


def _peek_version(value: bytes | None) -> int | None:
    return int(struct.unpack(">h", value[:2])[0]) if value and len(value) >= 2 else None


def _offset_value(group: str, topic: str, partition: int, value: bytes, key_version: int) -> Record:
    reader = _Reader(value)
    try:
        version = reader.int16()
        if version in (0, 1, 2):
            offset = reader.int64()
            reader.string()
            commit_ts = reader.int64()
        elif version == 3:
            offset = reader.int64()
            reader.int32()
            reader.string()
            commit_ts = reader.int64()
        elif version == 4:
            offset = reader.int64()
            reader.int32()
            reader.compact_string()
            commit_ts = reader.int64()
            reader.tagged_fields()
        else:
            return UnknownRecord(key_version, version)
    except (_Truncated, struct.error) as exc:
        return Undecodable(f"offset commit value: {exc}")
    return OffsetCommit(group, topic, partition, offset, commit_ts)


def _group_value(group: str, value: bytes, key_version: int) -> Record:
    reader = _Reader(value)
    try:
        version = reader.int16()
        if not 0 <= version <= 3:
            return UnknownRecord(key_version, version)
        protocol_type = reader.string()
        generation = reader.int32()
        reader.nullable_string()
        reader.nullable_string()
        if version >= 2:
            reader.int64()
        members = []
        for _ in range(reader.array_length()):
            member_id = reader.string()
            if version >= 3:
                reader.nullable_string()
            client_id = reader.string()
            client_host = reader.string()
            if version >= 1:
                reader.int32()
            reader.int32()
            reader.bytes_()
            assignment = reader.bytes_()
            topics = _assignment(assignment) if protocol_type == "consumer" else ()
            members.append(Member(member_id, client_id, client_host, topics))
    except (_Truncated, struct.error) as exc:
        return Undecodable(f"group metadata value: {exc}")
    return GroupMetadata(group, protocol_type, generation, tuple(members))


def _assignment(buf: bytes) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """ConsumerProtocolAssignment (v0-v3 share the prefix): version, [topic, [partition]]; empty if unreadable."""
    if not buf:
        return ()
    reader = _Reader(buf)
    try:
        reader.int16()
        out = []
        for _ in range(reader.array_length()):
            topic = reader.string()
            partitions = tuple(reader.int32() for _ in range(reader.array_length()))
            out.append((topic, partitions))
    except (_Truncated, struct.error):
        return ()
    return tuple(out)
