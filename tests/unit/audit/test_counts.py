"""Client-side counts (issue #26, point 2): per topic and minute of event time, drained as deltas, with the latency
from the record timestamp; and the reporter's and wrappers' bookkeeping, without a cluster (the real producer and
consumer are in tests/integration/audit/test_audit.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_NOT_AVAILABLE, KafkaError, Message

from audit.client import AuditReporter, ConsumerAudit
from audit.counts import ClientCounts
from audit.minutes import MINUTE_MS
from audit.streams import CLIENT_SCHEMA, CLIENT_STREAM, ClientOrigin, utc
from pulse.sli_sink import Stream

M = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS


@dataclass
class Offered:
    """An SliPublisher that keeps what it is given (the seam the SLI sink fills in production)."""

    tables: list[tuple[Stream, pa.Table]] = field(default_factory=list)

    def offer(self, stream: Stream, table: pa.Table) -> bool:
        self.tables.append((stream, table))
        return True


@pytest.mark.parametrize(
    ("events", "want"),
    [
        pytest.param(
            [("sent", "a", 5), ("sent", "a", 59_999), ("acknowledged", "a", 5, 1_005)],
            [("a", 0, 2, 1, 0, 0, 0, 1, 1.0, 1.0)],
            id="one-minute-two-sent-one-acked",
        ),
        pytest.param(
            [("sent", "a", MINUTE_MS + 1), ("sent", "a", 1), ("failed", "a", 1)],
            [("a", 0, 1, 0, 1, 0, 0, 0, 0.0, None), ("a", 1, 1, 0, 0, 0, 0, 0, 0.0, None)],
            id="minutes-of-event-time-oldest-first",
        ),
        pytest.param(
            [("received", "b", 0), ("received", "a", 0), ("processed", "a", 0, 3_000), ("processed", "a", 0, 1_000)],
            [("a", 0, 0, 0, 0, 1, 2, 2, 4.0, 3.0), ("b", 0, 0, 0, 0, 1, 0, 0, 0.0, None)],
            id="per-topic-latency-sum-and-max",
        ),
        pytest.param(
            [("processed", "a", 5_000, 4_000)],
            [("a", 0, 0, 0, 0, 0, 1, 1, 0.0, 0.0)],
            id="a-timestamp-from-the-future-is-latency-0",
        ),
    ],
)
def test_counts_per_topic_and_minute(events: list[tuple[object, ...]], want: list[tuple[object, ...]]) -> None:
    counts = ClientCounts()
    for kind, topic, ts, *now in events:
        assert isinstance(kind, str) and isinstance(topic, str) and isinstance(ts, int)
        counts.count(kind, topic, M + ts, None if not now else M + int(str(now[0])))
    got = [
        (
            r["topic"],
            (r["minute"] - utc(M)).total_seconds() // 60,  # type: ignore[operator]
            r["sent"],
            r["acknowledged"],
            r["failed"],
            r["received"],
            r["processed"],
            r["latency_count"],
            r["latency_sum_s"],
            r["latency_max_s"],
        )
        for r in counts.drain()
    ]
    assert got == want
    assert counts.drain() == []  # drained: the next report carries only what came after


def test_the_reporter_sends_deltas_in_the_client_schema() -> None:
    counts, offered = ClientCounts(), Offered()
    origin = ClientOrigin("prod", "billing", "consumer", "billing-v2")
    reporter = AuditReporter(counts, offered, origin, clock=lambda: (M + 90_000) / 1000)
    assert reporter.report() == 0 and offered.tables == []  # nothing counted, nothing offered
    counts.count("received", "orders", M)
    assert reporter.report() == 1
    stream, table = offered.tables[0]
    assert stream == CLIENT_STREAM and table.schema == CLIENT_SCHEMA
    row = table.to_pylist()[0]
    assert (row["cluster"], row["app"], row["role"], row["group"], row["topic"]) == (
        "prod", "billing", "consumer", "billing-v2", "orders"
    )  # fmt: skip
    assert (row["time"], row["minute"], row["received"]) == (utc(M + 90_000), utc(M), 1)


def test_the_consumer_audit_counts_by_record_timestamp_and_skips_errors() -> None:
    counts = ClientCounts()
    audit = ConsumerAudit(counts, clock=lambda: (M + 2 * MINUTE_MS) / 1000)
    stamped = Message(topic="orders", partition=0, offset=1, timestamp=(TIMESTAMP_CREATE_TIME, M + 5))
    unstamped = Message(topic="orders", partition=0, offset=2, timestamp=(TIMESTAMP_NOT_AVAILABLE, -1))
    failed = Message(topic="orders", error=KafkaError(KafkaError._PARTITION_EOF))
    for message in (stamped, unstamped, failed):
        audit.received(message)
    audit.processed(stamped)
    rows = {(r["minute"], r["received"], r["processed"], r["latency_max_s"]) for r in counts.drain()}
    assert rows == {(utc(M), 1, 1, 119.995), (utc(M + 2 * MINUTE_MS), 1, 0, None)}
