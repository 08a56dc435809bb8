"""Reproduction for librdkafka's tracker: with librdkafka 2.16 (confluent-kafka 2.16.1), an Admin ListOffsets whose
request timeout runs out while the brokers' answers are on their way kills the process in native code (glibc's
"double free or corruption", SIGSEGV or SIGABRT). One client on one thread, kept alive to the end, every future
awaited: no misuse of ours. The cause of the SIGSEGV behind the `flaky` mark test_lag_new_protocol.py carried
(docs/testing.md, "No reruns").

Usage: python3 tests/repro/admin_list_offsets_timeout.py BOOTSTRAP [SECONDS]
against any cluster (`kafka-pulse dev up --brokers 1`). It creates `repro-list-offsets` (100 partitions) if missing,
then asks ListOffsets(latest) for all of them with 1-20 ms timeouts for SECONDS (default 30). Exit 0 and a count
line when it survived; a crash ends it by a signal (-6 or -11 seen from a parent). Not collected by pytest.

Run 2026-11-29 against a 1-broker dev cluster (Kafka 4.3.1, confluent-kafka 2.16.1 / librdkafka 2.16.0, 4 busy loops
on the 2 cores): 3 runs of 3 crashed within seconds, twice SIGABRT ("double free or corruption (!prev)"), once
SIGSEGV. Nearest upstream report: librdkafka issue 4605 (another timed-out Admin request, an assertion).
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

TOPIC = "repro-list-offsets"
PARTITIONS = 100


def main(bootstrap: str, seconds: float) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    if TOPIC not in admin.list_topics(timeout=30).topics:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(timeout=60)
        time.sleep(2)  # a repro script, not a test: the leaders settle
    request = {TopicPartition(TOPIC, p): OffsetSpec.latest() for p in range(PARTITIONS)}  # type: ignore[no-untyped-call]
    answered = timed_out = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for timeout_s in (0.001, 0.005, 0.01, 0.02):
            futures = admin.list_offsets(request, request_timeout=timeout_s)
            for future in futures.values():
                try:
                    future.result(timeout=timeout_s + 5)
                    answered += 1
                except (KafkaException, TimeoutError):
                    timed_out += 1
    print(f"survived {seconds:g} s: {answered} answered, {timed_out} timed out", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 30.0))
