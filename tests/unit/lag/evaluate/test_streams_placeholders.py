"""A streams group's partition without a commit: Kafka's `kafka-streams-groups --describe --offsets` prints its lag
from the log start (end minus earliest), so the evaluator does too, where Burrow's placeholder of a consumer group
stays at 0. The case behind a run that disagreed with the tool: WordCount paused before its counting task had
committed the repartition topic's partition 0, which held 504 records (0 here, 504 there)."""

from __future__ import annotations

import pytest

from lag.evaluate.evaluator import Evaluator
from lag.evaluate.rules import RuleParams
from lag.protocol import Status
from lag.store.offsets import OffsetStore
from lag.store.streams_starts import uncommitted_lag

CLUSTER = "local"
REPARTITION = "wordcount-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
NOW_MS = 1_000_000


def store_with_one_commit(streams_groups: list[str]) -> OffsetStore:
    """Partition 0 of the repartition topic holds 504 records, never committed; partition 1 is committed at its
    end (96), by a streams group `app` and a consumer group `plain` alike."""
    store = OffsetStore(intervals=3)
    for partition, hwm in ((0, 504), (1, 96)):
        store.add_hwm(CLUSTER, REPARTITION, partition, hwm, NOW_MS - 1000)
    for group in ("app", "plain"):
        store.add_commit(CLUSTER, group, REPARTITION, 1, 96, NOW_MS - 500, NOW_MS)
    store.streams_starts.replace(CLUSTER, streams_groups, {(REPARTITION, 0): 0, (REPARTITION, 1): 0})
    return store


def lags(store: OffsetStore, group: str) -> tuple[dict[int, int], int]:
    status = Evaluator(store, _params()).evaluate_group(CLUSTER, group, NOW_MS)
    assert status.status is not Status.NOTFOUND
    return {p.partition: p.current_lag for p in status.partitions}, status.totallag


def test_a_streams_groups_uncommitted_partition_lags_from_the_log_start_as_kafkas_tool_says() -> None:
    store = store_with_one_commit(["app"])
    assert lags(store, "app") == ({0: 504, 1: 0}, 504)
    status = Evaluator(store, _params()).evaluate_group(CLUSTER, "app", NOW_MS)
    placeholder = next(p for p in status.partitions if p.partition == 0)
    assert placeholder.status is Status.OK and placeholder.end is None  # judged as Burrow's placeholder is
    assert "504 records from the log start" in placeholder.reason


def test_a_consumer_groups_placeholder_keeps_burrows_zero() -> None:
    assert lags(store_with_one_commit(["app"]), "plain") == ({0: 0, 1: 0}, 0)


def test_log_start_purged_by_streams_counts_from_there() -> None:
    """Streams deletes repartition records below its commits (DeleteRecords): the log start moves, and so does the
    lag of a partition it has not committed."""
    store = store_with_one_commit(["app"])
    store.streams_starts.replace(CLUSTER, ["app"], {(REPARTITION, 0): 400})
    assert lags(store, "app") == ({0: 104, 1: 0}, 104)


def test_without_a_log_start_read_the_placeholder_stays_at_zero() -> None:
    assert lags(store_with_one_commit([]), "app") == ({0: 0, 1: 0}, 0)


@pytest.mark.parametrize(
    ("hwm", "start", "lag"), [(504, 0, 504), (10, 10, 0), (5, 9, 0), (None, 0, None), (7, None, None)]
)
def test_uncommitted_lag(hwm: int | None, start: int | None, lag: int | None) -> None:
    assert uncommitted_lag(hwm, start) == lag


def _params() -> RuleParams:
    return RuleParams(mode="burrow", intervals=3, allowed_lag=0, minimum_complete=0.0, offset_refresh_ms=1000)
