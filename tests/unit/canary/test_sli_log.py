"""The SLI event log: rows read back with the documented schema, flushes on the interval and on
stop, the disk bound, a full queue and an unwritable directory; real files in a temporary directory, no Kafka."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from canary.events import ProbeResult
from canary.sli_log import (
    PARTITIONING,
    SCHEMA,
    SliLog,
    SliLogCollector,
    TargetTagged,
    configure_sli_log,
    files_to_remove,
)
from pulse.config import SliLogConfig, parse_config
from pulse.errors import ConfigError
from pulse.polling import poll

DOC = Path(__file__).resolve().parents[3] / "docs" / "sli-log.md"
T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)

CONSUMED = ProbeResult(
    time=T0,
    cluster="dev",
    topic="__pulse_canary",
    partition=1,
    broker=2,
    rack="az-b",
    client_rack="az-a",
    producer_id="abc",
    sequence=7,
    produce_ok=True,
    produce_latency_s=0.004,
    consume_ok=True,
    e2e_latency_s=0.006,
    offset=41,
)
FAILED = replace(
    CONSUMED,
    sequence=8,
    broker=None,
    rack=None,
    client_rack=None,
    produce_ok=False,
    produce_latency_s=None,
    consume_ok=None,
    e2e_latency_s=None,
    error="_MSG_TIMED_OUT",
    offset=None,
)
LOST = replace(CONSUMED, sequence=9, consume_ok=False, e2e_latency_s=None, lost=True)
DUPLICATE = replace(CONSUMED, produce_latency_s=None, duplicate=True, out_of_order=True, offset=45)


def read_log(directory: Path) -> pa.Table:
    """What the SLO engine does: the hive-partitioned dataset with the documented partition schema."""
    partitioning = ds.partitioning(PARTITIONING, flavor="hive")
    return ds.dataset(directory, format="parquet", partitioning=partitioning).to_table()


def documented_columns() -> list[tuple[str, str, bool]]:
    """(column, type, nullable) from the table in docs/sli-log.md."""
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+?) \| (yes|no) \|", DOC.read_text(), flags=re.MULTILINE)
    return [(name, typ, nullable == "yes") for name, typ, nullable in rows]


def arrow_type_name(typ: pa.DataType) -> str:
    names = {pa.string(): "string", pa.int32(): "int32", pa.int64(): "int64", pa.float64(): "float64"}
    names[pa.bool_()] = "bool"
    if isinstance(typ, pa.TimestampType):
        return f"timestamp[{typ.unit}, tz={typ.tz}]"
    return names[typ]


def test_the_documented_columns_are_the_written_ones() -> None:
    want = [(f.name, arrow_type_name(f.type), f.nullable) for f in SCHEMA]
    assert documented_columns() == want


def test_rows_read_back_with_the_documented_schema_partitioned_by_utc_date(tmp_path: Path) -> None:
    next_day = replace(CONSUMED, time=T0 + timedelta(hours=12), sequence=10)  # 00:00 UTC on the 22nd
    log = SliLog(tmp_path, flush_interval_s=3600).start()
    for event in (CONSUMED, FAILED, LOST, DUPLICATE, next_day):
        log.record(event)
    TargetTagged(log, "dr").record(replace(CONSUMED, sequence=11))
    log.stop()

    assert sorted(p.name for p in tmp_path.iterdir()) == ["date=2026-11-21", "date=2026-11-22"]
    table = read_log(tmp_path)
    assert table.schema.remove(table.schema.get_field_index("date")) == SCHEMA
    rows = sorted(table.to_pylist(), key=lambda r: r["sequence"])
    assert [(r["sequence"], r["date"]) for r in rows] == [
        (7, "2026-11-21"),
        (7, "2026-11-21"),
        (8, "2026-11-21"),
        (9, "2026-11-21"),
        (10, "2026-11-22"),
        (11, "2026-11-21"),
    ]
    consumed, duplicate = sorted(rows[:2], key=lambda r: r["duplicate"])
    assert consumed == {
        "time": T0,
        "cluster": "dev",
        "target_cluster": None,
        "topic": "__pulse_canary",
        "partition": 1,
        "broker": 2,
        "rack": "az-b",
        "client_rack": "az-a",
        "producer_id": "abc",
        "sequence": 7,
        "produce_ok": True,
        "produce_latency_s": 0.004,
        "consume_ok": True,
        "e2e_latency_s": 0.006,
        "lost": False,
        "duplicate": False,
        "out_of_order": False,
        "error": None,
        "offset": 41,
        "date": "2026-11-21",
    }
    assert (duplicate["duplicate"], duplicate["out_of_order"], duplicate["offset"]) == (True, True, 45)
    failed, lost = rows[2], rows[3]
    assert (failed["produce_ok"], failed["consume_ok"], failed["error"], failed["broker"]) == (
        False,
        None,
        "_MSG_TIMED_OUT",
        None,
    )
    assert (lost["lost"], lost["consume_ok"], lost["e2e_latency_s"]) == (True, False, None)
    assert rows[5]["target_cluster"] == "dr"
    assert log.stats().rows_written == 6


def test_rows_wait_for_the_interval_and_are_written_on_stop(tmp_path: Path) -> None:
    log = SliLog(tmp_path, flush_interval_s=3600).start()
    log.record(CONSUMED)
    poll(log._queue.qsize, lambda queued: queued == 0, 10, "the writer took the row")
    assert list(tmp_path.rglob("*.parquet")) == []  # taken, but an hour is not up
    log.stop()
    assert read_log(tmp_path).num_rows == 1


def test_rows_are_written_when_the_interval_passes_without_a_stop(tmp_path: Path) -> None:
    log = SliLog(tmp_path, flush_interval_s=0.2).start()
    try:
        log.record(CONSUMED)
        poll(log.stats, lambda stats: stats.rows_written == 1, 30, "one row written")
        assert read_log(tmp_path).num_rows == 1
        log.record(LOST)  # and again on the next interval, not only once
        poll(log.stats, lambda stats: stats.rows_written == 2, 30, "two rows written")
    finally:
        log.stop()
    assert log.stats().files_written == 2


def test_the_oldest_files_go_first_to_stay_under_max_bytes(tmp_path: Path) -> None:
    # An earlier run's file counts against the bound and is the oldest.
    earlier = SliLog(tmp_path).start()
    earlier.record(replace(CONSUMED, sequence=0))
    earlier.stop()
    one_file = next(tmp_path.rglob("*.parquet")).stat().st_size
    log = SliLog(tmp_path, flush_interval_s=3600, max_bytes=3 * one_file + one_file // 2).start()
    try:
        for seq in range(1, 7):
            log.record(replace(CONSUMED, sequence=seq))
            assert log.flush()
    finally:
        log.stop()
    stats = log.stats()
    files = list(tmp_path.rglob("*.parquet"))
    assert sum(f.stat().st_size for f in files) <= log.max_bytes
    assert stats.bytes_on_disk == sum(f.stat().st_size for f in files)
    assert stats.files_removed == 7 - len(files) and stats.files_removed >= 3
    assert stats.bytes_removed > 0
    kept = sorted(read_log(tmp_path).column("sequence").to_pylist())
    assert kept == list(range(7 - len(files), 7))  # the newest survive


@pytest.mark.parametrize(
    ("sizes", "max_bytes", "want"),
    [
        pytest.param({"part-2": 10, "part-1": 10, "part-3": 10}, 30, [], id="fits"),
        pytest.param({"part-2": 10, "part-1": 10, "part-3": 10}, 25, ["part-1"], id="oldest-first"),
        pytest.param({"part-2": 10, "part-1": 10, "part-3": 10}, 9, ["part-1", "part-2", "part-3"], id="all-go"),
        pytest.param({"part-1": 50, "part-2": 1}, 10, ["part-1"], id="one-big-old-file"),
    ],
)
def test_files_to_remove(sizes: dict[str, int], max_bytes: int, want: list[str]) -> None:
    assert files_to_remove(list(sizes.items()), max_bytes) == want


def test_a_full_queue_drops_and_counts_instead_of_blocking(tmp_path: Path) -> None:
    log = SliLog(tmp_path, queue_size=2)  # writer not started: nothing drains the queue
    for seq in range(5):
        log.record(replace(CONSUMED, sequence=seq))
    assert log.stats().rows_dropped == {"queue_full": 3, "write_error": 0}
    log.start()
    log.stop()
    assert read_log(tmp_path).num_rows == 2


def test_an_unwritable_directory_is_counted_and_the_rows_wait_for_it(tmp_path: Path) -> None:
    # A path below a regular file cannot be created by anyone; chmod would not stop root, who runs CI here.
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    log = SliLog(blocker / "sli", flush_interval_s=3600).start()
    try:
        log.record(CONSUMED)
        assert log.flush()
        log.record(LOST)
        assert log.flush()
        stats = log.stats()
        assert (stats.write_errors, stats.rows_written, stats.pending_rows) == (2, 0, 2)
        assert log._thread is not None and log._thread.is_alive()
        blocker.unlink()  # the disk comes back
        assert log.flush()
    finally:
        log.stop()
    assert log.stats().rows_written == 2
    assert sorted(read_log(tmp_path / "blocker" / "sli").column("sequence").to_pylist()) == [7, 9]


def test_rows_over_the_retry_buffer_are_dropped_and_counted(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    log = SliLog(blocker / "sli", flush_interval_s=3600, queue_size=3).start()
    try:
        for seq in range(5):
            log.record(replace(CONSUMED, sequence=seq))
            assert log.flush()
    finally:
        log.stop()
    stats = log.stats()
    assert stats.rows_dropped["write_error"] == 2
    assert stats.pending_rows == 3


def test_metrics_show_the_writers_health(tmp_path: Path) -> None:
    log = SliLog(tmp_path, queue_size=1)
    log.record(CONSUMED)
    log.record(LOST)  # dropped: the queue holds one
    log.start()
    log.stop()
    registry = CollectorRegistry()
    registry.register(SliLogCollector(log))
    text = generate_latest(registry).decode()
    assert "kafka_pulse_canary_sli_log_rows_written_total 1.0" in text
    assert 'kafka_pulse_canary_sli_log_rows_dropped_total{reason="queue_full"} 1.0' in text
    assert "kafka_pulse_canary_sli_log_write_errors_total 0.0" in text
    assert "kafka_pulse_canary_sli_log_last_flush_timestamp_seconds" in text


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"flush_interval_s": 61}, "canary.sli_log.flush_interval_s: Input should be less than or equal to 60"),
        ({"flush_interval_s": 0}, "canary.sli_log.flush_interval_s: Input should be greater than 0"),
        ({"max_bytes": 1000}, "canary.sli_log.max_bytes: Input should be greater than or equal to 1048576"),
        ({"queue_size": 0}, "canary.sli_log.queue_size: Input should be greater than or equal to 1"),
    ],
)
def test_bad_sli_log_settings_are_refused_with_their_key(section: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml.safe_dump({"canary": {"sli_log": section}}), "pulse.yaml", {})
    assert message in str(caught.value)


def test_configured_log_defaults_under_the_state_dir_and_registers_its_families(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    log = configure_sli_log(SliLogConfig(max_bytes=1 << 20), registry, tmp_path)
    assert log is not None
    assert (log.directory, log.max_bytes, log._thread) == (tmp_path / "sli" / "canary", 1 << 20, None)  # not started
    assert registry.get_sample_value("kafka_pulse_canary_sli_log_rows_written_total") == 0
    assert configure_sli_log(SliLogConfig(enabled=False), CollectorRegistry(), tmp_path) is None
