"""The reconciliation on real Kafka and Spark (issue #26 point 3; docs/audit.md, "Reconciliation"): client and
broker counts published through a real SLI sink to `<prefix>audit-client` and `<prefix>audit-broker`, then
`python -m kafka_pulse.cli.audit reconcile --once` (its own JVM with Spark's Kafka source) reads both topics and
prints the findings computed by hand: one group skipped 100 records, the producer had 3 failed sends and 2
acknowledged records are not in the log; the healthy group has none. The rows are built by hand (the library and
the broker-side audit are tested on Kafka in test_audit.py), minutes in the past, so nothing waits for a minute."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from audit import BROKER_STREAM, CLIENT_STREAM, MinuteAudit
from audit.minutes import MINUTE_MS, minute_of
from audit.streams import ClientOrigin, broker_table, client_table
from pulse.sli_sink import SliSink
from tests.fixtures.kafka import KafkaHandle
from tests.integration.audit.conftest import read_stream, reconcile_once

pytestmark = pytest.mark.integration


def counts(minute_ms: int, **given: int) -> dict[str, object]:
    base = dict.fromkeys(("sent", "acknowledged", "failed", "received", "processed"), 0)
    zero = {"latency_count": 0, "latency_sum_s": 0.0, "latency_max_s": None}
    return {"topic": "orders", "minute": datetime.fromtimestamp(minute_ms / 1000, UTC), **base, **given, **zero}


def test_the_reconciliation_reads_both_topics_and_finds_what_went_astray(
    kafka: KafkaHandle, sink: SliSink, sink_prefix: str, tmp_path: Path
) -> None:
    now = int(time.time() * 1000)
    first = minute_of(now) - 30 * MINUTE_MS  # three old minutes, judged with a 5-minute deadline
    m = [first + i * MINUTE_MS for i in range(3)]
    shop = ClientOrigin("prod", "shop", "producer")
    fraud = ClientOrigin("prod", "fraud", "consumer", "fraud")
    client = [
        # Minute 0 in two reports (a split minute); minute 1 with 3 failed sends; minute 2 all acknowledged.
        client_table(shop, [counts(m[0], sent=60, acknowledged=60), counts(m[1], sent=50, acknowledged=47, failed=3)],
                     now),
        client_table(shop, [counts(m[0], sent=40, acknowledged=40), counts(m[2], sent=30, acknowledged=30)], now),
        # billing sought past 100 records of minute 0; fraud processed everything (minute 1 across a restart).
        client_table(ClientOrigin("prod", "billing", "consumer", "billing"), [
            counts(m[0], received=0, processed=0), counts(m[1], received=47, processed=47),
            counts(m[2], received=28, processed=28)], now),
        client_table(fraud, [
            counts(m[0], received=100, processed=100), counts(m[1], received=20, processed=20),
            counts(m[2], received=28, processed=28)], now),
        client_table(fraud, [counts(m[1], received=27, processed=27)], now),
        # A report of the current minute moves the watermark past the three.
        client_table(shop, [counts(minute_of(now), sent=1, acknowledged=1)], now),
    ]  # fmt: skip
    written = {m[0]: 100, m[1]: 47, m[2]: 28}  # minute 2: 2 acknowledged records lost (an unclean election)
    broker = broker_table(
        "prod",
        [MinuteAudit(g, "orders", minute, n, n, minute + 2 * MINUTE_MS) for g in ("billing", "fraud")
         for minute, n in written.items()],
        now,
    )  # fmt: skip
    for table in client:
        sink.offer(CLIENT_STREAM, table)
    sink.offer(BROKER_STREAM, broker)
    read_stream(kafka, sink_prefix, CLIENT_STREAM, sum(t.num_rows for t in client))
    read_stream(kafka, sink_prefix, BROKER_STREAM, broker.num_rows)

    got = reconcile_once(kafka, sink_prefix, tmp_path, "5m")

    def iso(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")

    def finding(minute: int, group: str | None, kind: str, count: int) -> dict[str, object]:
        return {
            "cluster": "prod",
            "topic": "orders",
            "group": group,
            "minute": iso(minute),
            "kind": kind,
            "count": count,
        }

    assert sorted(got["findings"], key=lambda f: (f["minute"], f["group"] or "", f["kind"])) == [
        finding(m[0], "billing", "skipped", 100),
        finding(m[1], None, "unacknowledged", 3),
        finding(m[2], None, "missing", 2),
    ]
    assert got["minutes_judged"] == 3
    assert got["late_reports"] == 0
