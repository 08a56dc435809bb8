"""`__consumer_offsets` decoding: every key/value version, tombstones, unknown kinds, and a fuzz that never crashes."""

from __future__ import annotations

import random
import struct

import pytest

from lag.ingest.offsets_topic import OffsetsTopicReader
from lag.ingest.records import (
    GroupMetadata,
    GroupTombstone,
    OffsetCommit,
    OffsetTombstone,
    Undecodable,
    UnknownRecord,
    commit_fields,
    decode_record,
    decode_record_general,
    offset_commit_fast,
)
from lag.service import LagService
from lag.store.freshness import SourceHealth
from pulse.config import LagConfig


def s16(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def offset_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + s16(group) + s16(topic) + struct.pack(">i", partition)


def offset_value(version: int, offset: int, ts: int, metadata: str = "m") -> bytes:
    head = struct.pack(">hq", version, offset)
    if version in (0, 2):
        return head + s16(metadata) + struct.pack(">q", ts)
    if version == 1:
        return head + s16(metadata) + struct.pack(">qq", ts, ts + 1000)
    if version == 3:
        return head + struct.pack(">i", 7) + s16(metadata) + struct.pack(">q", ts)
    raw = metadata.encode()
    return head + struct.pack(">i", 7) + uvarint(len(raw) + 1) + raw + struct.pack(">q", ts) + b"\x00"


def assignment(topics: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 3, len(topics))
    for topic, parts in topics.items():
        out += s16(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return out + struct.pack(">i", -1)


def group_value(version: int, members: list[tuple[str, str, str, dict[str, list[int]]]]) -> bytes:
    out = struct.pack(">h", version) + s16("consumer") + struct.pack(">i", 5) + s16("range") + s16("m-1")
    if version >= 2:
        out += struct.pack(">q", 1_700_000_000_000)
    out += struct.pack(">i", len(members))
    for member_id, client_id, host, topics in members:
        out += s16(member_id)
        if version >= 3:
            out += s16(None)
        out += s16(client_id) + s16(host)
        if version >= 1:
            out += struct.pack(">i", 300_000)
        sub = b"\x00\x01"
        body = assignment(topics)
        out += struct.pack(">i", 45_000) + struct.pack(">i", len(sub)) + sub + struct.pack(">i", len(body)) + body
    return out


@pytest.mark.parametrize("key_version", [0, 1])
@pytest.mark.parametrize("value_version", [0, 1, 2, 3, 4])
def test_offset_commit_every_version(key_version: int, value_version: int) -> None:
    record = decode_record(offset_key("g", "t", 3, key_version), offset_value(value_version, 42, 1_700_000_000_123))
    assert record == OffsetCommit("g", "t", 3, 42, 1_700_000_000_123)


def test_v4_worked_example_from_franz_go_1105() -> None:
    """twmb/franz-go#1105's value: version 4, offset 2217128, leader epoch -1, metadata '', commit ts 1758335260726."""
    value = bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600")
    assert decode_record(offset_key("g", "t", 0), value) == OffsetCommit("g", "t", 0, 2217128, 1758335260726)


def test_v4_metadata_longer_than_127_bytes_needs_a_real_varint() -> None:
    """Burrow HEAD reads the compact length as one byte; a 200-byte metadata takes a two-byte varint."""
    record = decode_record(offset_key("g", "t", 0), offset_value(4, 9, 1000, metadata="x" * 200))
    assert record == OffsetCommit("g", "t", 0, 9, 1000)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_every_version(version: int) -> None:
    value = group_value(version, [("m-1", "client-a", "/10.0.0.1", {"t": [0, 2]}), ("m-2", "client-b", "/h2", {})])
    record = decode_record(struct.pack(">h", 2) + s16("g"), value)
    assert isinstance(record, GroupMetadata)
    assert (record.group, record.protocol_type, record.generation) == ("g", "consumer", 5)
    assert [(m.client_id, m.client_host, m.assignment) for m in record.members] == [
        ("client-a", "/10.0.0.1", (("t", (0, 2)),)),
        ("client-b", "/h2", ()),
    ]


def test_tombstones() -> None:
    assert decode_record(offset_key("g", "t", 1), None) == OffsetTombstone("g", "t", 1)
    assert decode_record(offset_key("g", "t", 1), b"") == OffsetTombstone("g", "t", 1)
    assert decode_record(struct.pack(">h", 2) + s16("g"), None) == GroupTombstone("g")


def test_unknown_kinds_are_reported_not_guessed() -> None:
    assert decode_record(struct.pack(">h", 99) + s16("g"), b"\x00\x00") == UnknownRecord(99, 0)  # not in Kafka 4.3
    assert decode_record(offset_key("g", "t", 0), struct.pack(">h", 5) + b"\x00" * 30) == UnknownRecord(1, 5)
    assert decode_record(struct.pack(">h", 2) + s16("g"), struct.pack(">h", 4) + b"\x00" * 8) == UnknownRecord(2, 4)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"", b""),
        (b"\x00", None),
        (offset_key("g", "t", 0)[:-2], b""),
        (offset_key("g", "t", 0), offset_value(3, 1, 1)[:-3]),
        (offset_key("g", "t", 0), b"\x00\x04" + b"\x00" * 12 + b"\xff\xff\xff\xff\xff\xff"),
    ],
    ids=["empty", "one-byte-key", "short-key", "short-value", "endless-varint"],
)
def test_truncated_input_is_undecodable(key: bytes, value: bytes | None) -> None:
    assert isinstance(decode_record(key, value), Undecodable)


def _valid_records(rng: random.Random) -> list[tuple[bytes, bytes | None]]:
    out: list[tuple[bytes, bytes | None]] = []
    for _ in range(200):
        group = "g" * rng.randint(0, 20)
        v = rng.randint(0, 4)
        out.append((offset_key(group, "topic", rng.randint(0, 99), rng.randint(0, 1)), offset_value(v, 5, 6)))
        gv = rng.randint(0, 3)
        out.append((struct.pack(">h", 2) + s16(group), group_value(gv, [("m", "c", "h", {"t": [1, 2, 3]})])))
    return out


def test_fuzz_ten_thousand_random_and_mutated_records_never_crash() -> None:
    rng = random.Random(20240905)
    seeds = _valid_records(rng)
    kinds: dict[str, int] = {}
    total = 0
    for i in range(12_000):
        if i % 3 == 0:  # pure noise
            key = rng.randbytes(rng.randint(0, 40))
            value = rng.choice([None, rng.randbytes(rng.randint(0, 80))])
        else:  # a valid record, mutated: bit flips, truncation, extension or a spliced version
            seed_key, seed_value = rng.choice(seeds)
            mutable_key, mutable_value = bytearray(seed_key), bytearray(seed_value or b"")
            target = mutable_value if mutable_value and rng.random() < 0.7 else mutable_key
            for _ in range(rng.randint(1, 4)):
                op = rng.randint(0, 3)
                if op == 0 and target:
                    target[rng.randrange(len(target))] ^= 1 << rng.randrange(8)
                elif op == 1 and target:
                    del target[rng.randrange(len(target)) :]
                elif op == 2:
                    target.extend(rng.randbytes(rng.randint(1, 8)))
                elif target:
                    target[rng.randrange(len(target))] = rng.choice([0x00, 0x7F, 0x80, 0xFF])
            key, value = bytes(mutable_key), bytes(mutable_value)
        record = decode_record(key, value)
        assert record == decode_record_general(key, value), (key, value)  # the fast path changes nothing
        kinds[type(record).__name__] = kinds.get(type(record).__name__, 0) + 1
        total += 1
    assert total >= 10_000
    assert kinds.get("Undecodable", 0) > 1000, kinds  # the mutations really broke records
    assert kinds.get("OffsetCommit", 0) > 100, kinds  # and some still decode


def _fast_path_edges() -> list[tuple[bytes, bytes | None]]:
    """Records at the fast path's bounds: each field of the common shape broken or stretched in turn."""
    key, v3, v4 = offset_key("grp", "tpc", 7), offset_value(3, 42, 1000, ""), offset_value(4, 42, 1000, "")
    out: list[tuple[bytes, bytes | None]] = [(key, v3), (key, v4), (offset_key("", "", 0), v3)]
    out += [(key, v[:n]) for v in (v3, v4) for n in range(len(v) + 1)]  # every truncation
    out += [(key[:n], v3) for n in range(len(key) + 1)]
    out += [(key + b"junk", v3 + b"junk"), (key, v4[:-1] + b"\x01\x00\x00")]  # trailing bytes; a tagged field
    out += [(key, v3[:14] + struct.pack(">h", n) + v3[16:]) for n in (-1, -2, -16, 1, 7)]  # metadata lengths
    out += [(key, v4[:14] + bytes([b]) + v4[15:]) for b in (0, 2, 0x7F, 0x80, 0xFF)]  # compact lengths
    out += [(key[:2] + struct.pack(">h", n) + key[4:], v3) for n in (-1, 0x7FFF, 2, 4)]  # group lengths
    out += [(key[:7] + struct.pack(">h", n) + key[9:], v3) for n in (-1, -0x8000, 2, 9)]  # topic lengths
    out += [(struct.pack(">h", kv) + key[2:], v3) for kv in (-1, 2, 3, 0x100)]  # key versions
    out += [(key, struct.pack(">h", vv) + v3[2:]) for vv in (-1, 5, 0x100, 0x0103)]  # value versions
    out += [(key, offset_value(v, -5, -7, "x" * 200)) for v in range(5)]  # negatives; a two-byte varint
    huge = struct.pack(">hH", 1, 0x8001) + b"g" * 0x8001 + s16("t") + struct.pack(">i", 0)  # length < 0 as int16
    return [*out, (huge, v3)]


@pytest.mark.parametrize("index", range(len(_fast_path_edges())))
def test_fast_path_edges_decode_as_the_general_decoder(index: int) -> None:
    key, value = _fast_path_edges()[index]
    assert decode_record(key, value) == decode_record_general(key, value)


def test_the_common_shapes_take_the_fast_path() -> None:
    """Key v1 with value v3 or v4 (what Kafka 3.x and 4.x write) are read without the general reader."""
    for version in range(5):
        record = offset_commit_fast(offset_key("g", "t", 3), offset_value(version, 42, 1_700_000_000_123, ""))
        assert record == OffsetCommit("g", "t", 3, 42, 1_700_000_000_123)


def test_the_fast_path_gives_the_commit_fields_in_the_records_order() -> None:
    fields = commit_fields(offset_key("g", "t", 3), offset_value(3, 42, 1_700_000_000_123))
    assert fields == ("g", "t", 3, 42, 1_700_000_000_123)
    assert fields is not None and OffsetCommit(*fields) == offset_commit_fast(
        offset_key("g", "t", 3), offset_value(3, 42, 1_700_000_000_123)
    )
    assert commit_fields(offset_key("g", "t", 3), None) is None


def test_the_reader_applies_fast_fields_and_decoded_records_in_their_order() -> None:
    """The reader keeps a fast-path commit as a plain tuple (#27: a dataclass per commit was a tenth of its CPU): it
    is stored and counted as an `OffsetCommit` like one only the general decoder reads (a two-byte varint), and a
    tombstone between them is applied in its place."""
    health = SourceHealth(stale_after_s=30, recovery_s=0)
    service = LagService(LagConfig(intervals=3), health)
    reader = OffsetsTopicReader("c", {}, service, health)  # ingest() alone: no Kafka is contacted
    now = service.clock_ms()
    with service.locked() as store:
        for p in (0, 1):
            store.add_hwm("c", "t", p, 100, now)
    reader.ingest(
        [
            (offset_key("g", "t", 0), offset_value(3, 10, now - 2000)),
            (offset_key("g", "t", 0), None),
            (offset_key("g", "t", 1), offset_value(4, 11, now - 1000, "x" * 200)),
            (offset_key("g", "t", 0), offset_value(4, 12, now)),
        ]
    )
    store = service.store
    slots = {s.partition: s.slot for s in store.slots("c", "g")}
    assert [store.commits.count(slots[p]) for p in (0, 1)] == [1, 1]
    assert [store.commits.newest(slots[p]) for p in (0, 1)] == [(12, now, 88), (11, now - 1000, 89)]
    assert dict(reader.decoded) == {"OffsetCommit": 3, "OffsetTombstone": 1}
