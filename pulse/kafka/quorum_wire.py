"""DescribeQuorum on a connection of its own, without kafka-python: `check` is CPU-bound on its start, and
kafka-python's import (0.1 s of CPU) was most of its quorum read on a healthy cluster. PLAINTEXT and TLS only (a
SASL login stays with kafka-python, pulse/kafka/quorum.py). The answer has the shape of kafka-python's
`describe_metadata_quorum`, so `parse_quorum` reads both, and its errors are named as kafka-python names them. The
answers are read with lag's `__consumer_offsets` reader (`wire.py`).

ApiVersions v0 first on the same connection (served before authentication): a broker that does not list
DescribeQuorum runs ZooKeeper (`QuorumNotKraft`); then DescribeQuorum at the highest version both know (v0-v2).
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Iterable
from typing import Any

from pulse.config import split_host_port
from pulse.kafka.broker_probe import read_exactly
from pulse.kafka.quorum import METADATA_TOPIC, QuorumNotKraft, QuorumUnreachable, QuorumUnread, kafka_error
from pulse.kafka.wire import Reader

API_VERSIONS, DESCRIBE_QUORUM = 18, 55
MAX_VERSION = 2
"""The newest DescribeQuorum version this codec reads (Kafka 3.8+, KIP-853); older brokers get theirs."""
CLIENT_ID = b"kafka-pulse-check"
MAX_FRAME_BYTES = 1 << 20
"""Both answers are a few KiB; a larger announced size is not a Kafka broker, so it is never buffered."""


# --- encoding (pure) ----------------------------------------------------------------------------------------------


def _frame(api_key: int, version: int, correlation_id: int, body: bytes, flexible: bool) -> bytes:
    """Request header v1 (v2 with its empty tagged fields when `flexible`), then `body`, size-prefixed."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    payload = header + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(payload)) + payload


def api_versions_request(correlation_id: int) -> bytes:
    """ApiVersions v0: no body."""
    return _frame(API_VERSIONS, 0, correlation_id, b"", flexible=False)


def describe_quorum_request(correlation_id: int, version: int) -> bytes:
    """DescribeQuorum (flexible from v0) for partition 0 of the metadata topic."""
    name = METADATA_TOPIC.encode()
    topic = _uvarint(len(name) + 1) + name + _uvarint(2) + struct.pack(">i", 0) + b"\x00" + b"\x00"
    return _frame(DESCRIBE_QUORUM, version, correlation_id, _uvarint(2) + topic + b"\x00", flexible=True)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --- decoding (pure) ----------------------------------------------------------------------------------------------


def parse_api_versions(frame: bytes, correlation_id: int) -> dict[int, tuple[int, int]]:
    """ApiVersions v0's answer: API key -> (min, max) version; ValueError when it is not the answer to our request
    or carries an error."""
    reader = Reader(frame)
    if (got := reader.int32()) != correlation_id:
        raise ValueError(f"correlation id {got}, expected {correlation_id}")
    if error := reader.int16():
        raise ValueError(f"ApiVersions error code {error}")
    keys: dict[int, tuple[int, int]] = {}
    for _ in range(reader.array_length()):
        key, low, high = reader.int16(), reader.int16(), reader.int16()
        keys[key] = (low, high)
    return keys


def _replica(reader: Reader, version: int) -> dict[str, Any]:
    replica: dict[str, Any] = {"replica_id": reader.int32()}
    if version >= 2:
        reader.uuid()  # replica_directory_id (KIP-853), not judged
    replica["log_end_offset"] = reader.int64()
    replica["last_fetch_timestamp"] = reader.int64() if version >= 1 else -1
    replica["last_caught_up_timestamp"] = reader.int64() if version >= 1 else -1
    reader.tagged_fields()
    return replica


def parse_describe_quorum(frame: bytes, correlation_id: int, version: int) -> dict[str, Any]:
    """DescribeQuorum's answer as kafka-python's `describe_metadata_quorum` returns it (topics, partitions with
    `error`: None or its text); a top-level error raises QuorumUnread as `describe_quorum` words it. The nodes of v2
    (the controllers' listeners) are not read."""
    reader = Reader(frame)
    if (got := reader.int32()) != correlation_id:
        raise ValueError(f"correlation id {got}, expected {correlation_id}")
    reader.tagged_fields()  # response header v1
    error = reader.int16()
    message = reader.compact_string() if version >= 2 else None
    if error:
        exc = kafka_error(error, message or "")
        raise QuorumUnread(f"{type(exc).__name__}: {exc}")
    topics = []
    for _ in range(reader.compact_array_length()):
        name = reader.compact_string()
        partitions = []
        for _ in range(reader.compact_array_length()):
            index, code = reader.int32(), reader.int16()
            text = reader.compact_string() if version >= 2 else None
            partition: dict[str, Any] = {
                "partition_index": index,
                "leader_id": reader.int32(),
                "leader_epoch": reader.int32(),
                "high_watermark": reader.int64(),
                "current_voters": [_replica(reader, version) for _ in range(reader.compact_array_length())],
                "observers": [_replica(reader, version) for _ in range(reader.compact_array_length())],
                "error": str(kafka_error(code, text)) if code else None,
            }
            reader.tagged_fields()
            partitions.append(partition)
        reader.tagged_fields()
        topics.append({"topic_name": name, "partitions": partitions})
    return {"topics": topics}


# --- the exchange -------------------------------------------------------------------------------------------------


def describe_quorum_wire(servers: Iterable[str], timeout_s: float, context: ssl.SSLContext | None) -> dict[str, Any]:
    """DescribeQuorum's answer from the first of `servers` that takes a connection, all within `timeout_s`; raises
    QuorumNotKraft on a ZooKeeper cluster, QuorumUnreachable when no server takes a connection, QuorumUnread for
    anything else (a timeout included: the server was reached)."""
    limit = time.monotonic() + timeout_s
    refused: list[str] = []
    for server in servers:
        host, port = split_host_port(server)
        try:
            return _ask(host, port, limit, context)
        except TimeoutError as exc:
            raise QuorumUnread(f"{server}: no answer within {timeout_s:.1f} s") from exc
        except ssl.SSLError as exc:
            raise QuorumUnread(f"{server}: TLS: {exc}") from exc
        except ValueError as exc:
            raise QuorumUnread(f"{server}: {exc}") from exc
        except OSError as exc:  # refused, reset, unreachable: the next server may answer
            refused.append(f"{server}: {type(exc).__name__}")
    raise QuorumUnreachable(f"cannot connect: {'; '.join(refused) or 'no servers'}")


def _ask(host: str, port: int, limit: float, context: ssl.SSLContext | None) -> dict[str, Any]:
    with socket.create_connection((host, port), timeout=max(limit - time.monotonic(), 0.001)) as raw:
        raw.settimeout(max(limit - time.monotonic(), 0.001))
        # wrap_socket detaches `raw`, so the TLS socket must be closed itself (else its fd waits for the GC).
        with context.wrap_socket(raw, server_hostname=host) if context is not None else raw as conn:
            conn.sendall(api_versions_request(1))
            keys = parse_api_versions(_answer(conn, limit), 1)
            if DESCRIBE_QUORUM not in keys:
                raise QuorumNotKraft(f"{host}:{port} does not know DescribeQuorum (a ZooKeeper cluster)")
            low, high = keys[DESCRIBE_QUORUM]
            version = min(high, MAX_VERSION)
            if version < low:
                raise QuorumUnread(f"DescribeQuorum v{low}-v{high} on {host}:{port}; this reads v0-v{MAX_VERSION}")
            conn.sendall(describe_quorum_request(2, version))
            return parse_describe_quorum(_answer(conn, limit), 2, version)


def _answer(conn: socket.socket, limit: float) -> bytes:
    conn.settimeout(max(limit - time.monotonic(), 0.001))
    (size,) = struct.unpack(">i", read_exactly(conn, 4))
    if not 4 <= size <= MAX_FRAME_BYTES:
        raise ValueError(f"answer size {size} outside 4..{MAX_FRAME_BYTES}")
    return read_exactly(conn, size)
