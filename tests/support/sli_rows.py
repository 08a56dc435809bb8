"""SLI rows of the canary's schema numbered by `sequence`, for the SLI sink's tests: the number says where a row
belongs in the order, and counting them finds a loss or a duplicate."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from canary.sli_log import SCHEMA
from pulse.sli_sink import Stream

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def stream(name: str) -> Stream:
    """The canary's schema under `name` (tests name the stream after their topic, with an empty prefix)."""
    return Stream(name, 1, SCHEMA)


def rows(numbers: Iterable[int], cluster: str = "sli-test") -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "time": T0 + timedelta(seconds=n),
                "cluster": cluster,
                "topic": "__pulse_canary",
                "partition": n % 3,
                "broker": 1,
                "producer_id": "0123456789abcdef",
                "sequence": n,
                "produce_ok": n % 7 != 0,
                "produce_latency_s": 0.004 + n / 1e6,
                "consume_ok": True,
                "e2e_latency_s": 0.011,
                "lost": False,
                "duplicate": False,
                "out_of_order": False,
                "error": None if n % 7 else "NOT_ENOUGH_REPLICAS",
                "offset": n,
            }
            for n in numbers
        ],
        schema=SCHEMA,
    )
