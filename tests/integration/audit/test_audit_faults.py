"""The audit end to end on real Kafka and Spark (issue #26 point 4; docs/audit.md, "Shown end to end"): a producer
and three consumer groups using the library, the broker-side audit, and `audit reconcile --once` on local Spark.
Group `skipper` seeks past 100 records of minute 1, group `laggard` stops 3 minutes short of the end of the
backlog, 3 sends of minute 2 fail (the broker refuses their size), group `healthy` reads everything: the findings
are exactly those, in their minutes, with their counts, and none for `healthy`. Record timestamps (CreateTime,
set by the producer) are placed minutes in the past and a record of the current minute moves the reconciliation's
watermark past them, so the test waits for no minute to end. (The unclean election: test_audit_truncation.py.)"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from audit import (
    BROKER_STREAM,
    CLIENT_STREAM,
    AuditedProducer,
    AuditReporter,
    BrokerAudit,
    ClientCounts,
    ClientOrigin,
    MinuteAudit,
)
from audit.minutes import MINUTE_MS, minute_of
from pulse.sli_sink import SliSink
from tests.fixtures.kafka import KafkaHandle
from tests.integration.audit.conftest import consume_group, read_stream, reconcile_once

pytestmark = pytest.mark.integration

PARTITIONS = (0, 1)
MINUTES = 6
"""Minutes of backlog, the first 10 minutes ago."""
PER_PARTITION = 120
"""Records per partition per minute."""
WRITTEN = PER_PARTITION * len(PARTITIONS)
HEAD = 5
"""Records per partition sent now: the producer's current minute, which moves the reconciliation's watermark."""
SKIP_AT, SKIPPED = PER_PARTITION + 10, 100
"""`skipper` seeks from partition 0's offset 130 to 230: 100 records, all of minute 1 (offsets 120..239)."""
BEHIND = 3
"""`laggard` processes the first MINUTES - BEHIND minutes and stops there."""
FAILED_MINUTE, FAILED = 2, 3
TOO_LARGE = 2_500_000
"""A value the broker refuses (message.max.bytes ~1 MiB) though the producer accepts it: a failed send."""
GROUPS = ("healthy", "skipper", "laggard")


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def test_skipped_lagging_and_failed_records_are_found_in_their_minutes(
    kafka: KafkaHandle, sink: SliSink, sink_prefix: str, tmp_path: Path
) -> None:
    topic = kafka.create_topic("audit-faults", partitions=len(PARTITIONS))
    base = minute_of(int(time.time() * 1000)) - 10 * MINUTE_MS
    m = [base + i * MINUTE_MS for i in range(MINUTES)]

    # The producer: the backlog in event-time order per partition, 3 sends of minute 2 refused by the broker
    # (flushed apart, so no good record shares their batch), then the head.
    sent = ClientCounts()
    producer = AuditedProducer(kafka.producer(**{"message.max.bytes": 3 * TOO_LARGE}), sent)
    failures: list[object] = []
    for i, minute in enumerate(m):
        for p in PARTITIONS:
            for n in range(PER_PARTITION):
                producer.produce(topic, b"order", partition=p, timestamp=minute + n * 100)
        if i == FAILED_MINUTE:
            assert producer.flush(30) == 0
            for n in range(FAILED):
                producer.produce(
                    topic, os.urandom(TOO_LARGE), partition=1, timestamp=minute + 30_000 + n,
                    on_delivery=lambda err, _msg: failures.append(err) if err is not None else None,
                )  # fmt: skip
            assert producer.flush(30) == 0
    for p in PARTITIONS:
        for _ in range(HEAD):
            producer.produce(topic, b"order", partition=p)
    assert producer.flush(30) == 0
    assert len(failures) == FAILED

    end = MINUTES * PER_PARTITION + HEAD
    behind = (MINUTES - BEHIND) * PER_PARTITION  # the first offset of minute 3 on each partition
    consumed = {
        "healthy": consume_group(kafka, topic, "healthy", dict.fromkeys(PARTITIONS, end)),
        "skipper": consume_group(kafka, topic, "skipper", dict.fromkeys(PARTITIONS, end), (0, SKIP_AT, SKIPPED)),
        "laggard": consume_group(kafka, topic, "laggard", dict.fromkeys(PARTITIONS, behind)),
    }

    # "Incomplete past a deadline": a minute a group has not passed is held back (no row) until `max_wait_s`
    # after its end, and settles as incomplete then. With an hour, `laggard`'s minutes 3..5 are not yet due ...
    patient = BrokerAudit(
        "dev", kafka.consumer("kp-audit-patient"), kafka.admin(), kafka.group_offsets(), [topic], GROUPS, None,
        grace_s=1, max_wait_s=3600, since_ms=base,
    )  # fmt: skip
    try:
        early = {(a.group, a.minute_ms) for a in patient.cycle(int(time.time() * 1000)) if a.minute_ms in m}
    finally:
        patient.close()
    assert early == {(g, minute) for g in ("healthy", "skipper") for minute in m} | {("laggard", x) for x in m[:3]}
    # ... with the audit's minimum of a minute, they settle now (their ends are 4 to 6 minutes old), 0 passed.
    broker = BrokerAudit(
        "dev", kafka.consumer("kp-audit"), kafka.admin(), kafka.group_offsets(), [topic], GROUPS, sink,
        grace_s=1, max_wait_s=60, since_ms=base,
    )  # fmt: skip
    try:
        settled = broker.cycle(int(time.time() * 1000))
    finally:
        broker.close()
    late = {a.minute_ms: a for a in settled if a.group == "laggard" and a.minute_ms in m[BEHIND:]}
    assert late == {x: MinuteAudit("laggard", topic, x, WRITTEN, 0, None) for x in m[BEHIND:]}

    reporters = [AuditReporter(sent, sink, ClientOrigin("dev", "shop", "producer"))]
    reporters += [AuditReporter(c, sink, ClientOrigin("dev", g, "consumer", g)) for g, c in consumed.items()]
    client_rows = sum(r.report() for r in reporters)
    read_stream(kafka, sink_prefix, CLIENT_STREAM, client_rows)
    read_stream(kafka, sink_prefix, BROKER_STREAM, len(settled))

    got = reconcile_once(kafka, sink_prefix, tmp_path, "1m", *GROUPS)
    mine = [f for f in got["findings"] if f["topic"] == topic]
    assert sorted(mine, key=lambda f: (f["minute"], f["group"] or "", f["kind"])) == [
        {"cluster": "dev", "topic": topic, "group": group, "minute": iso(minute), "kind": kind, "count": count}
        for minute, group, kind, count in [
            (m[1], "skipper", "skipped", SKIPPED),
            (m[FAILED_MINUTE], None, "unacknowledged", FAILED),
            *((x, "laggard", "incomplete", WRITTEN) for x in m[BEHIND:]),
        ]
    ]
    assert got["late_reports"] == 0
