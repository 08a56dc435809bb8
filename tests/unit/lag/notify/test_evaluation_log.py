"""The lag evaluation log (a `lag` source for the SLO engine): rows built from verdicts, the
documented schema, a cycle written under its UTC date, unknown groups as no data, a full queue never blocking a
cycle, a failing evaluation not ending the log, and the config keys; real files in a temporary directory."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import yaml
from prometheus_client import CollectorRegistry

from lag.notify.evaluation_log import (
    GROUP_SCHEMA,
    GROUPS,
    PARTITION_SCHEMA,
    PARTITIONING,
    PARTITIONS,
    EvaluationLog,
    configure_evaluation_log,
    group_table,
    partition_table,
    writer,
)
from lag.protocol import CommitPoint, GroupStatus, PartitionVerdict, Status
from pulse.config import LagEvaluationLogConfig, parse_config
from pulse.errors import ConfigError
from pulse.ports import wait_until

DOC = Path(__file__).resolve().parents[4] / "docs" / "sli-log.md"
NOW = datetime(2026, 11, 21, 23, 59, 45, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)

CAUGHT_UP = PartitionVerdict("orders", 0, Status.OK, CommitPoint(90, 1, 0), CommitPoint(100, 2, 0), 0, 1.0,
                             lag_seconds=0.0, reason="OK: lag 0")  # fmt: skip
STOPPED = PartitionVerdict("orders", 1, Status.STOP, CommitPoint(10, 1, 5), CommitPoint(20, 2, 30), 480, 1.0,
                           lag_seconds=95.5, reason="STOP: no commit for 600 s")  # fmt: skip
NEVER_COMMITTED = PartitionVerdict("orders", 2, Status.OK, None, None, 0, 0.0, reason="no commit from this group")
GROUP_OK = GroupStatus("prod", "billing", Status.OK, 1.0, (CAUGHT_UP,), 1, CAUGHT_UP, 0, lag_seconds=0.0)
GROUP_ERR = GroupStatus("prod", "audit", Status.ERR, 2 / 3, (CAUGHT_UP, STOPPED, NEVER_COMMITTED), 3, STOPPED, 480,
                        "orders[1] STOP: no commit for 600 s", lag_seconds=95.5, exact_lag_seconds=99.0)  # fmt: skip
GROUP_UNKNOWN = GroupStatus("dr", "billing", Status.UNKNOWN, 0.0, (), 0, None, 0, "cluster dr: no HWM read yet")
GROUP_EXPIRED = GroupStatus("prod", "gone", Status.NOTFOUND, 0.0, (), 0, None, 0, "group not found")
STATUSES = [GROUP_OK, GROUP_ERR, GROUP_UNKNOWN, GROUP_EXPIRED]


def test_group_rows_carry_the_verdict_and_mark_groups_without_one_unknown() -> None:
    rows = group_table(STATUSES, NOW_MS).to_pylist()
    assert rows[0] == {
        "time": NOW, "cluster": "prod", "group": "billing", "status": "OK", "ok": True, "unknown": False,
        "complete": 1.0, "partition_count": 1, "totallag": 0, "maxlag": 0, "maxlag_topic": "orders",
        "maxlag_partition": 0, "lag_seconds": 0.0, "exact_lag_seconds": None, "reason": None,
    }  # fmt: skip
    err = rows[1]
    assert (err["status"], err["ok"], err["unknown"], err["totallag"]) == ("ERR", False, False, 480)
    assert (err["maxlag"], err["maxlag_topic"], err["maxlag_partition"]) == (480, "orders", 1)
    assert (err["lag_seconds"], err["exact_lag_seconds"]) == (95.5, 99.0)
    assert err["complete"] == pytest.approx(2 / 3) and err["reason"] == "orders[1] STOP: no commit for 600 s"
    # no verdict: neither ok nor bad, so `good: ok ...`, `total: NOT unknown` counts nothing for it
    for row, status in ((rows[2], "UNKNOWN"), (rows[3], "NOTFOUND")):
        assert (row["status"], row["ok"], row["unknown"]) == (status, False, True)
        assert (row["maxlag"], row["lag_seconds"], row["partition_count"]) == (None, None, 0)
    assert rows[2]["reason"] == "cluster dr: no HWM read yet"


def test_partition_rows_are_per_judged_group_and_a_never_committed_partition_is_unknown() -> None:
    rows = partition_table(STATUSES, NOW_MS).to_pylist()
    assert [(r["group"], r["partition"], r["status"], r["ok"], r["unknown"]) for r in rows] == [
        ("billing", 0, "OK", True, False),
        ("audit", 0, "OK", True, False),
        ("audit", 1, "STOP", False, False),
        ("audit", 2, "OK", False, True),  # Burrow's OK placeholder is no verdict
    ]
    stopped = rows[2]
    assert (stopped["lag"], stopped["offset"], stopped["lag_seconds"], stopped["topic"]) == (480, 20, 95.5, "orders")
    assert (rows[3]["offset"], rows[3]["lag_seconds"]) == (None, None)
    assert partition_table([GROUP_UNKNOWN], NOW_MS).num_rows == 0


def documented(section: str) -> list[tuple[str, str, bool]]:
    """(column, type, nullable) of the table under `## <section>` in docs/sli-log.md ("never" null: not nullable)."""
    text = DOC.read_text().split("# Lag evaluation log", 1)[1]
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+?) \| ([^|]+?) \|", body, flags=re.MULTILINE)
    return [(name, typ, null != "never") for name, typ, null in rows]


def type_name(typ: pa.DataType) -> str:
    if isinstance(typ, pa.TimestampType):
        return f"timestamp[{typ.unit}, tz={typ.tz}]"
    return {pa.string(): "string", pa.int32(): "int32", pa.int64(): "int64", pa.float64(): "float64",
            pa.bool_(): "bool"}[typ]  # fmt: skip


@pytest.mark.parametrize(
    ("section", "schema"), [("Group rows", GROUP_SCHEMA), ("Group-partition rows", PARTITION_SCHEMA)]
)
def test_the_documented_columns_are_the_written_ones(section: str, schema: pa.Schema) -> None:
    assert documented(section) == [(f.name, type_name(f.type), f.nullable) for f in schema]


class Canned:
    """A `StatusSource` answering fixed verdicts (the evaluator itself is tested elsewhere and on the real cluster)."""

    def __init__(self, statuses: Sequence[GroupStatus], fail_first: int = 0) -> None:
        self.statuses = list(statuses)
        self.fail_first = fail_first
        self.calls: list[int | None] = []

    def clock_ms(self) -> int:
        return NOW_MS

    def all_statuses(self, now_ms: int | None = None) -> list[GroupStatus]:
        self.calls.append(now_ms)
        if len(self.calls) <= self.fail_first:
            raise RuntimeError("evaluator bug")
        return self.statuses


def read(directory: Path) -> pa.Table:
    return ds.dataset(directory, format="parquet", partitioning=ds.partitioning(PARTITIONING, flavor="hive")).to_table()


def test_a_cycle_writes_groups_and_opt_in_partitions_under_the_utc_date(tmp_path: Path) -> None:
    source = Canned(STATUSES)
    groups_only = EvaluationLog(source, writer(tmp_path / "a"))
    with_partitions = EvaluationLog(source, writer(tmp_path / "b"), partitions=True)
    for log in (groups_only, with_partitions):
        log.log.start()
        assert log.run_once() == (4 if log is groups_only else 8)
        assert log.run_once(NOW_MS + 15_000) > 0  # 00:00:00 UTC on the 22nd: the next date's folder
        log.log.stop()
    assert source.calls == [NOW_MS, NOW_MS + 15_000] * 2  # the rows' time is the time the verdicts were taken at
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [GROUPS]
    assert sorted(p.name for p in (tmp_path / "a" / GROUPS).iterdir()) == ["date=2026-11-21", "date=2026-11-22"]
    table = read(tmp_path / "a" / GROUPS)
    assert table.schema.remove(table.schema.get_field_index("date")) == GROUP_SCHEMA
    assert sorted({(r["date"], r["time"].isoformat()) for r in table.to_pylist()}) == [
        ("2026-11-21", "2026-11-21T23:59:45+00:00"), ("2026-11-22", "2026-11-22T00:00:00+00:00"),
    ]  # fmt: skip
    parts = read(tmp_path / "b" / PARTITIONS)
    assert parts.num_rows == 8 and parts.schema.remove(parts.schema.get_field_index("date")) == PARTITION_SCHEMA
    assert read(tmp_path / "b" / GROUPS).num_rows == 8


def test_a_cycle_that_does_not_fit_the_queue_is_dropped_whole_and_counted(tmp_path: Path) -> None:
    log = EvaluationLog(Canned(STATUSES), writer(tmp_path, queue_size=6), partitions=True)  # writer not started
    assert log.run_once() == 4  # the 4 group rows fit; the 4 partition rows do not fit beside them
    assert log.run_once() == 0  # nothing waits: the cycle returns at once
    assert log.log.stats().rows_dropped == {"queue_full": 12, "write_error": 0}
    log.log.start()
    log.log.stop()
    assert read(tmp_path / GROUPS).num_rows == 4 and not (tmp_path / PARTITIONS).exists()


def test_a_failing_evaluation_is_counted_and_the_cycles_go_on(tmp_path: Path) -> None:
    log = EvaluationLog(Canned(STATUSES, fail_first=1), writer(tmp_path, flush_interval_s=0.2), interval_s=0.05)
    log.start()
    try:
        assert wait_until(lambda: log.cycles["failed"] == 1 and log.log.stats().rows_written >= 4, 30), log.cycles
    finally:
        log.stop()
    assert read(tmp_path / GROUPS).num_rows == log.log.stats().rows_written


def test_configured_log_defaults_under_the_state_dir_and_registers_its_families(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    source = Canned(STATUSES)
    log = configure_evaluation_log(LagEvaluationLogConfig(max_bytes=1 << 20), source, registry, tmp_path)
    assert log is not None
    assert (log.log.directory, log.log.max_bytes, log.interval_s, log.partitions) == (
        tmp_path / "sli" / "lag", 1 << 20, 15.0, False,
    )  # fmt: skip
    assert registry.get_sample_value("kafka_pulse_lag_evaluation_log_rows_written_total") == 0
    log.run_once()
    assert registry.get_sample_value("kafka_pulse_lag_evaluation_log_cycles_total", {"result": "ok"}) == 1
    assert registry.get_sample_value("kafka_pulse_lag_evaluation_log_pending_rows") == 4
    assert registry.get_sample_value("kafka_pulse_lag_evaluation_log_last_cycle_timestamp_seconds") == NOW_MS / 1000
    disabled = LagEvaluationLogConfig(enabled=False)
    assert configure_evaluation_log(disabled, source, CollectorRegistry(), tmp_path) is None


def test_evaluation_log_keys_parse() -> None:
    section = {"dir": "/var/lib/pulse/lag", "interval_s": 30, "partitions": True, "flush_interval_s": 20,
               "max_bytes": 2 << 20, "queue_size": 5000}  # fmt: skip
    config = parse_config(yaml.safe_dump({"lag": {"evaluation_log": section}}), "pulse.yaml", {}).lag.evaluation_log
    assert (config.dir, config.interval_s, config.partitions, config.flush_interval_s) == (
        Path("/var/lib/pulse/lag"), 30, True, 20,
    )  # fmt: skip
    assert (config.max_bytes, config.queue_size, config.enabled) == (2 << 20, 5000, True)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"interval_s": 61}, "lag.evaluation_log.interval_s: Input should be less than or equal to 60"),
        ({"interval_s": 0}, "lag.evaluation_log.interval_s: Input should be greater than 0"),
        ({"flush_interval_s": 90}, "lag.evaluation_log.flush_interval_s: Input should be less than or equal to 60"),
        ({"max_bytes": 1000}, "lag.evaluation_log.max_bytes: Input should be greater than or equal to 1048576"),
        ({"queue_size": 0}, "lag.evaluation_log.queue_size: Input should be greater than or equal to 1"),
        ({"partitions": "some"}, "lag.evaluation_log.partitions: Input should be a valid boolean"),
        ({"per_partition": True}, "lag.evaluation_log: unknown key 'per_partition'; did you mean 'partitions'?"),
    ],
)
def test_bad_evaluation_log_settings_are_refused_with_their_key(section: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml.safe_dump({"lag": {"evaluation_log": section}}), "pulse.yaml", {})
    assert message in str(caught.value)
