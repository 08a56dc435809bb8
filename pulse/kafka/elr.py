"""Eligible leader replicas (KIP-966) of the partitions under min ISR, through DescribeTopicPartitions (API key 75).

confluent-kafka's `describe_topics` (librdkafka 2.16) has no ELR fields, so the request goes through kafka-python's
`KafkaAdminClient.describe_topic_partitions`, the client the project already uses for DescribeQuorum and
reassignments. Only topics with a partition under min ISR are asked, so a healthy cluster costs nothing. The
verdict itself is `PartitionState.elr_verdict` (pulse/kafka/partitions.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pulse.kafka.admin_client import close_now, kafka_python_warnings, open_admin_client
from pulse.kafka.partitions import PartitionState

MAX_TOPICS = 1000
"""Topics with a partition under min ISR whose ELR one read asks for at most (the rest stay unknown)."""
PAGE_PARTITIONS = 2000
"""Partitions one DescribeTopicPartitions answer holds at most (the broker's default limit)."""
MAX_PAGES = 50
"""Answers one read follows the cursor through at most: 100,000 partitions."""

Replicas = tuple[tuple[int, ...], tuple[int, ...]]
"""A partition's ELR and last known ELR."""


@dataclass(frozen=True)
class ElrRead:
    """What one ELR read gave: each asked partition's ELR and last known ELR, and why some were not read."""

    by_partition: Mapping[tuple[str, int], Replicas] = field(default_factory=dict)
    reason: str = ""
    """Why partitions under min ISR have no ELR here (not supported, failed, past a bound); empty when all read."""


def elr_topics(states: Iterable[PartitionState]) -> list[str]:
    """The topics worth asking: those with a partition under min ISR, sorted (pure)."""
    return sorted({s.topic for s in states if s.is_under_min_isr})


def parse_answer(answer: Mapping[str, Any]) -> dict[tuple[str, int], Replicas]:
    """One `describe_topic_partitions` answer as ELR by partition (pure). kafka-python gives None for both an empty
    and an absent (null) list; an answered partition's ELR is known, so both read as empty. Topic and partition
    errors leave their partitions out (unknown)."""
    out: dict[tuple[str, int], Replicas] = {}
    for topic in answer.get("topics") or ():
        name = topic.get("name")
        if topic.get("error_code") or not isinstance(name, str):
            continue
        for p in topic.get("partitions") or ():
            if p.get("error_code"):
                continue
            elr = tuple(int(b) for b in p.get("eligible_leader_replicas") or ())
            last = tuple(int(b) for b in p.get("last_known_elr") or ())
            out[(name, int(p["partition_index"]))] = (elr, last)
    return out


def with_elr(states: Sequence[PartitionState], read: ElrRead) -> tuple[PartitionState, ...]:
    """`states` with the ELR `read` holds for them (pure); the others keep `elr=None`, unknown."""
    out = []
    for s in states:
        got = read.by_partition.get((s.topic, s.partition))
        out.append(s if got is None else replace(s, elr=got[0], last_known_elr=got[1]))
    return tuple(out)


def read_elr(
    settings: Mapping[str, Any], topics: Sequence[str], close: Callable[[Callable[[], None]], None] | None = None
) -> ElrRead:
    """DescribeTopicPartitions of `topics` (up to `MAX_TOPICS`) with kafka-python `settings`
    (pulse.profile.kafka_python_config, whose request timeout bounds each exchange), following the cursor. Never
    raises: a failure is the read's `reason`. `close` runs the client's close (the check closes on another thread,
    so a hung broker cannot hold it)."""
    if not topics:
        return ElrRead()
    asked, skipped = list(topics[:MAX_TOPICS]), len(topics) - MAX_TOPICS
    with kafka_python_warnings():
        from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
        from kafka.errors import KafkaError as KafkaPythonError

        out: dict[tuple[str, int], Replicas] = {}
        try:
            client = open_admin_client(settings)
        except KafkaPythonError as exc:
            return ElrRead(reason=f"DescribeTopicPartitions: cannot connect: {exc}")
        try:
            cursor: dict[str, Any] | None = None
            for _ in range(MAX_PAGES):
                answer = client.describe_topic_partitions(asked, PAGE_PARTITIONS, cursor)
                out |= parse_answer(answer)
                cursor = answer.get("next_cursor")
                if cursor is None:
                    break
            else:
                return ElrRead(out, f"DescribeTopicPartitions: past {MAX_PAGES} pages of {PAGE_PARTITIONS}")
        except (IncompatibleBrokerVersion, UnsupportedVersionError):
            return ElrRead(reason="DescribeTopicPartitions not supported (Kafka before 3.7)")
        except KafkaPythonError as exc:
            return ElrRead(out, f"DescribeTopicPartitions: {type(exc).__name__}: {exc}")
        finally:
            (close or close_now)(client.close)
    return ElrRead(out, f"{skipped} topics past the {MAX_TOPICS}-topic bound" if skipped > 0 else "")
