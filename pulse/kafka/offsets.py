"""Partition offsets (a log's start or end) read through a consumer, never the Admin API's ListOffsets.

With librdkafka 2.16 an Admin ListOffsets that reaches its request timeout while the broker's answer is on its way
aborts the process ("double free or corruption", or SIGSEGV; tests/repro/admin_list_offsets_timeout.py), while a
consumer's `offsets_for_times` times out cleanly. Every component that reads offsets asks here.
"""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition


def read_offsets(
    consumer: Consumer, partitions: list[tuple[str, int]], at: int, timeout_s: float
) -> dict[tuple[str, int], int]:
    """Every partition's offset at `at` (OFFSET_END for the end, OFFSET_BEGINNING for the start) in one
    ListOffsets round per leader; KafkaException when the round or any partition failed."""
    if not partitions:
        return {}
    answered = consumer.offsets_for_times([TopicPartition(t, p, at) for t, p in partitions], timeout=timeout_s)
    failed = next((tp for tp in answered if tp.error is not None), None)
    if failed is not None:
        raise KafkaException(failed.error)
    return {(tp.topic, tp.partition): tp.offset for tp in answered}
