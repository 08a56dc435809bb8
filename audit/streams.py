"""The audit's SLI streams (docs/audit.md, "Schema"): what the broker-side audit and the client library publish
through the SLI sink, as Arrow schemas and `Stream`s, and the rows they are made of (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa

from audit.minutes import MinuteAudit
from pulse.sli_sink import Stream

_TIME = pa.timestamp("us", tz="UTC")

BROKER_SCHEMA = pa.schema(
    [
        pa.field("time", _TIME, nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("minute", _TIME, nullable=False),
        pa.field("records_written", pa.int64(), nullable=False),
        pa.field("records_passed", pa.int64(), nullable=False),
        pa.field("completeness", pa.float64(), nullable=False),
        pa.field("complete", pa.bool_(), nullable=False),
        pa.field("passed_time", _TIME),
        pa.field("latency_s", pa.float64()),
    ]
)
"""One row per settled (group, topic, minute); columns in docs/audit.md, "Broker-side rows"."""

BROKER_STREAM = Stream("audit-broker", 1, BROKER_SCHEMA)
"""Topic `<prefix>audit-broker`, schema version 1."""

CLIENT_SCHEMA = pa.schema(
    [
        pa.field("time", _TIME, nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("app", pa.string(), nullable=False),
        pa.field("role", pa.string(), nullable=False),
        pa.field("group", pa.string()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("minute", _TIME, nullable=False),
        pa.field("sent", pa.int64(), nullable=False),
        pa.field("acknowledged", pa.int64(), nullable=False),
        pa.field("failed", pa.int64(), nullable=False),
        pa.field("received", pa.int64(), nullable=False),
        pa.field("processed", pa.int64(), nullable=False),
        pa.field("latency_count", pa.int64(), nullable=False),
        pa.field("latency_sum_s", pa.float64(), nullable=False),
        pa.field("latency_max_s", pa.float64()),
    ]
)
"""One row per (topic, minute of event time) with counts since the previous report; docs/audit.md,
"Client rows"."""

CLIENT_STREAM = Stream("audit-client", 1, CLIENT_SCHEMA)
"""Topic `<prefix>audit-client`, schema version 1."""


def utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def broker_table(cluster: str, audits: Sequence[MinuteAudit], now_ms: int) -> pa.Table:
    """The settled minutes as `audit-broker` rows, stamped `now_ms`."""
    return pa.Table.from_pylist(
        [
            {
                "time": utc(now_ms),
                "cluster": cluster,
                "group": a.group,
                "topic": a.topic,
                "minute": utc(a.minute_ms),
                "records_written": a.written,
                "records_passed": a.passed,
                "completeness": a.completeness,
                "complete": a.passed_at_ms is not None,
                "passed_time": None if a.passed_at_ms is None else utc(a.passed_at_ms),
                "latency_s": a.latency_s,
            }
            for a in audits
        ],
        schema=BROKER_SCHEMA,
    )


@dataclass(frozen=True, slots=True)
class ClientOrigin:
    """Who counts: the same on every row of one reporter."""

    cluster: str
    """The Kafka cluster the application talks to (the record key: one cluster's rows in order)."""
    app: str
    """The application's name, as its owners call it."""
    role: str
    """`producer` or `consumer`."""
    group: str | None = None
    """The consumer group (consumers only)."""


def client_table(origin: ClientOrigin, rows: Iterable[dict[str, object]], now_ms: int) -> pa.Table:
    """Counter rows (`audit.counts.ClientCounts.drain`) as `audit-client` rows, stamped `now_ms`."""
    head = {"time": utc(now_ms), "cluster": origin.cluster, "app": origin.app, "role": origin.role}
    return pa.Table.from_pylist(
        [{**head, "group": origin.group, **row} for row in rows],
        schema=CLIENT_SCHEMA,
    )
