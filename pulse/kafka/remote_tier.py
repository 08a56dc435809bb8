"""Tiered topics (KIP-405): which topics copy segments to remote storage, how much not-yet-copied data each may hold
before something is wrong, and each tiered partition's earliest local offset (KIP-1005: ListOffsets with timestamp
-4, EARLIEST_LOCAL_TIMESTAMP), below which a reader is served from the remote tier.

The allowance (pure, `copy_lag_allowance`): Kafka 4.4 added the topic configs `remote.copy.lag.ms|bytes` (KIP-1241)
that delay upload on purpose; before them (4.3 and older) a segment is copied as soon as it is rolled. Either way the
bytes a partition may hold un-copied are its configured delay (`remote.copy.lag.bytes` when > 0; when -1 or absent,
the effective `local.retention.bytes`, since un-copied data cannot be deleted locally and so overruns local
retention) plus one segment (the newest closed segment waits for the next copy task). The time form
(`remote.copy.lag.ms`, `local.retention.ms`) cannot be judged this way: the broker's copy lag is in bytes and
segments only (KIP-963), with no age.

librdkafka 2.16 sends that ListOffsets at a version the broker refuses for -4 (UNSUPPORTED_VERSION, seen on 4.3.1),
so the earliest local offsets are read with kafka-python's `list_partition_offsets` (v8+).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulse.kafka.admin_client import close_now, kafka_python_warnings, open_admin_client

TIERED_CONFIGS = (
    "remote.storage.enable",
    "segment.bytes",
    "retention.bytes",
    "local.retention.bytes",
    "remote.copy.lag.bytes",
)
"""The topic configs `tiered_topic` reads (DescribeConfigs); `remote.copy.lag.bytes` exists from Kafka 4.4."""
MAX_PARTITIONS = 10_000
"""Tiered partitions whose earliest local offset one read asks for at most (the rest are named in its reason)."""


@dataclass(frozen=True)
class TieredTopic:
    """A topic with `remote.storage.enable=true` and the copy lag it may have."""

    topic: str
    partitions: int
    allowed_copy_lag_bytes: float | None
    """Per partition: the configured delay plus one segment; None when nothing bounds it (unlimited retention and
    no delay configured)."""
    basis: str
    """Which config the delay came from: `remote.copy.lag.bytes`, `local.retention.bytes`, `retention.bytes`, or
    `none`."""


def _number(configs: Mapping[str, str | None], name: str) -> int | None:
    value = configs.get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def copy_lag_allowance(configs: Mapping[str, str | None]) -> tuple[float | None, str]:
    """The bytes one partition may hold not yet copied, and the config that set the delay (pure; module doc)."""
    segment = _number(configs, "segment.bytes") or 0
    delay = _number(configs, "remote.copy.lag.bytes")
    if delay is not None and delay >= 0:
        return float(delay + segment), "remote.copy.lag.bytes"
    local = _number(configs, "local.retention.bytes")
    basis = "local.retention.bytes"
    if local is None or local == -2:  # -2: local retention is the topic's whole retention
        local, basis = _number(configs, "retention.bytes"), "retention.bytes"
    if local is None or local < 0:
        return None, "none"
    return float(local + segment), basis


def tiered_topic(topic: str, configs: Mapping[str, str | None], partitions: int) -> TieredTopic | None:
    """`topic` as a tiered topic when its configs enable remote storage; None otherwise (pure)."""
    if (configs.get("remote.storage.enable") or "").lower() != "true":
        return None
    allowed, basis = copy_lag_allowance(configs)
    return TieredTopic(topic, partitions, allowed, basis)


@dataclass(frozen=True)
class EarliestLocalRead:
    """One read of tiered partitions' earliest local offsets."""

    offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    reason: str = ""
    """Why the read is incomplete (failed, past the bound); empty when every partition was read."""


def read_earliest_local(
    settings: Mapping[str, Any],
    partitions: Sequence[tuple[str, int]],
    close: Callable[[Callable[[], None]], None] | None = None,
) -> EarliestLocalRead:
    """ListOffsets(EARLIEST_LOCAL) of `partitions` (up to `MAX_PARTITIONS`) with kafka-python `settings`
    (pulse.profile.kafka_python_config), one request per leader. Never raises: a failure is the read's `reason`."""
    if not partitions:
        return EarliestLocalRead()
    asked, skipped = list(partitions[:MAX_PARTITIONS]), len(partitions) - MAX_PARTITIONS
    with kafka_python_warnings():
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec
        from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
        from kafka.errors import KafkaError as KafkaPythonError

        try:
            client = open_admin_client(settings)
        except KafkaPythonError as exc:
            return EarliestLocalRead(reason=f"ListOffsets(earliest local): cannot connect: {exc}")
        try:
            specs = {TopicPartition(t, p): OffsetSpec.EARLIEST_LOCAL for t, p in asked}
            answer = client.list_partition_offsets(specs)
        except (IncompatibleBrokerVersion, UnsupportedVersionError):
            return EarliestLocalRead(reason="ListOffsets(earliest local) not supported (Kafka before 3.9)")
        except KafkaPythonError as exc:
            return EarliestLocalRead(reason=f"ListOffsets(earliest local): {type(exc).__name__}: {exc}")
        finally:
            (close or close_now)(client.close)
    offsets = {(tp.topic, tp.partition): int(got.offset) for tp, got in answer.items() if int(got.offset) >= 0}
    return EarliestLocalRead(offsets, f"{skipped} partitions past the {MAX_PARTITIONS} bound" if skipped > 0 else "")
