"""The evaluator's group verdicts in the health check: the lag status -> check status mapping (default and per
pattern), the lag section it makes, and the overall verdict a stopped group gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kafka_pulse.check.facts import FailureKind, ProbeFailed
from kafka_pulse.check.judge.lag_verdicts import (
    GroupVerdict,
    LagVerdicts,
    from_group_statuses,
    judge_lag_verdicts,
    map_status,
)
from kafka_pulse.check.judge.verdict import Report, Section, Status, overall
from lag import GroupStatus
from lag import Status as LagStatus
from lag.protocol import PartitionVerdict
from pulse.config.lag import LagCheckStatusMap

BATCH = [LagCheckStatusMap(pattern="batch-.*", err="WARN")]
QUIET_STALLS = [LagCheckStatusMap(pattern="etl", stall="OK", err="WARN"), LagCheckStatusMap(pattern=".*", warn="OK")]


@pytest.mark.parametrize(
    ("group", "status", "worst", "rules", "expected"),
    [
        ("orders", "OK", None, [], Status.OK),
        ("orders", "WARN", None, [], Status.WARN),
        ("orders", "ERR", None, [], Status.CRIT),
        ("orders", "ERR", "STOP", [], Status.CRIT),
        ("orders", "ERR", "STALL", [], Status.CRIT),
        ("orders", "ERR", "REWIND", [], Status.CRIT),
        ("orders", "NOTFOUND", None, [], Status.UNKNOWN),
        ("orders", "UNKNOWN", None, [], Status.UNKNOWN),
        ("orders", "SOMETHING-NEW", None, [], Status.UNKNOWN),  # a status we do not know is never OK
        ("batch-nightly", "ERR", "STOP", BATCH, Status.WARN),  # STOP falls back to the rule's err
        ("batch-nightly", "WARN", None, BATCH, Status.WARN),  # not overridden: the default
        ("xbatch-nightly", "ERR", "STOP", BATCH, Status.CRIT),  # matched whole, not searched
        ("etl", "ERR", "STALL", QUIET_STALLS, Status.OK),  # the partition's own key first
        ("etl", "ERR", "STOP", QUIET_STALLS, Status.WARN),  # then err
        ("etl", "WARN", None, QUIET_STALLS, Status.WARN),  # first matching entry wins, not the later `.*`
        ("other", "WARN", None, QUIET_STALLS, Status.OK),
    ],
)
def test_lag_status_maps_to_a_check_status(
    group: str, status: str, worst: str | None, rules: list[LagCheckStatusMap], expected: Status
) -> None:
    assert map_status(GroupVerdict(group, status, worst), rules) is expected


def demo_groups() -> LagVerdicts:
    """The demo's three groups: one OK, one stopped, one stalled."""
    return LagVerdicts(
        "http://127.0.0.1:9308",
        (
            GroupVerdict("demo-ok", "OK"),
            GroupVerdict("demo-stop", "ERR", "STOP", 480, "no commit for 95 s"),
            GroupVerdict("demo-stall", "ERR", "STALL", 120),
        ),
    )


def test_a_stopped_group_makes_the_section_crit_and_names_it() -> None:
    section = judge_lag_verdicts(demo_groups(), [], "http://127.0.0.1:9308")
    assert section.status is Status.CRIT
    assert section.reasons[0] == "lag verdicts from http://127.0.0.1:9308 (running evaluator)"
    assert any("demo-stop is ERR (STOP) -> CRIT: no commit for 95 s" in r for r in section.reasons)
    assert [g["group"] for g in section.details["groups"]] == ["demo-stall", "demo-stop"]
    assert section.details["source"] == section.reasons[0]
    assert "worst: demo-stall (ERR (STALL))" in section.summary


def test_overrides_turn_the_section_down() -> None:
    rules = [LagCheckStatusMap(pattern="demo-st.*", err="WARN")]
    assert judge_lag_verdicts(demo_groups(), rules, "x").status is Status.WARN


def test_all_ok_groups_are_ok_and_unread_ones_are_unknown() -> None:
    ok = LagVerdicts("this process's evaluator", (GroupVerdict("a", "OK"),))
    assert judge_lag_verdicts(ok, [], ok.source).status is Status.OK
    partial = LagVerdicts("x", (GroupVerdict("a", "OK"),), unread=("b",))
    got = judge_lag_verdicts(partial, [], "x")
    assert got.status is Status.UNKNOWN
    assert "1 group(s) not read in time: b" in got.reasons


def test_a_listener_that_does_not_answer_is_unknown_with_the_reason_never_ok() -> None:
    failed = ProbeFailed(FailureKind.UNREACHABLE, "no answer from http://127.0.0.1:1: ConnectError")
    got = judge_lag_verdicts(failed, [], "http://127.0.0.1:1")
    assert got.status is Status.UNKNOWN
    assert got.reasons == ("lag verdicts from http://127.0.0.1:1 (running evaluator)", failed.reason)


def test_the_overall_verdict_is_crit_when_a_group_is_err_with_every_other_section_ok() -> None:
    ok = [Section(n, Status.OK, "fine") for n in ("brokers", "controller", "partitions", "round_trip")]
    lag = judge_lag_verdicts(demo_groups(), [], "this process's evaluator")
    sections = (*ok, lag)
    assert overall(sections) is Status.CRIT
    report = Report("dev", (), sections, datetime(2026, 1, 1, tzinfo=UTC), 1.0, 5.0)
    assert (report.status, report.status.exit_code) == (Status.CRIT, 2)


def group(cluster: str, name: str, status: LagStatus, *partitions: LagStatus) -> GroupStatus:
    parts = tuple(PartitionVerdict("t", i, p, None, None, 10, 1.0) for i, p in enumerate(partitions))
    return GroupStatus(cluster, name, status, 1.0, parts, len(parts), parts[0] if parts else None, 10)


def test_the_evaluator_s_statuses_become_verdicts_of_one_cluster_with_the_worst_partition() -> None:
    statuses = [
        group("dev", "stopped", LagStatus.ERR, LagStatus.OK, LagStatus.STOP),
        group("dev", "stalled", LagStatus.ERR, LagStatus.STALL, LagStatus.STOP),
        group("dev", "fine", LagStatus.OK, LagStatus.OK),
        group("other", "elsewhere", LagStatus.ERR, LagStatus.STOP),
    ]
    got = from_group_statuses("this process's evaluator", "dev", statuses)
    assert [(g.group, g.status, g.worst_partition) for g in got.groups] == [
        ("stopped", "ERR", "STOP"),
        ("stalled", "ERR", "STALL"),
        ("fine", "OK", None),
    ]
    assert judge_lag_verdicts(got, [], got.source).status is Status.CRIT
