"""The check's report shapes: the JSON keys are exactly those
docs/check.md lists, the table says the same, and the pure parsers behind the quorum and SLO facts."""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from kafka_pulse.check.consult.noisy_neighbours import add_noisy_neighbours
from kafka_pulse.check.consult.slow_brokers import add_slow_brokers
from kafka_pulse.check.deadline import Deadline, Task, first_success, process_age_s
from kafka_pulse.check.facts import (
    FailureKind,
    GroupLag,
    LagFacts,
    NotAvailable,
    ProbeFailed,
    QuorumFacts,
    SloBudget,
    SloFacts,
    VoterState,
)
from kafka_pulse.check.judge.partition_verdict import judge_partitions
from kafka_pulse.check.judge.round_trip_verdict import judge_round_trip
from kafka_pulse.check.judge.verdict import (
    Report,
    Section,
    Status,
    judge_brokers,
    judge_controller,
    judge_lag,
    judge_slo,
)
from kafka_pulse.check.probe.kafka_probes import quorum_facts
from kafka_pulse.check.probe.slo_budgets import pushgateway_budgets, read_parquet
from kafka_pulse.check.render import SCHEMA, print_report, report_json
from pulse.config import PulseConfig
from slo.output import write_results
from slo.results import AlertResult, SloResult
from tests.unit.kafka_pulse.test_check_verdict import meta, probe, slo_facts, trip, trips

DOC = Path(__file__).resolve().parents[3] / "docs" / "check.md"
AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def report() -> Report:
    sections = (
        Section(
            "brokers",
            Status.CRIT,
            "2/3 brokers answer; down: broker 2",
            ("broker 2 no answer",),
            (2,),
            {"expected": [1, 2, 3], "registered": [1, 2, 3], "brokers": []},
        ),
        Section("controller", Status.OK, "node 1 is the active controller (epoch 3)"),
        Section("partitions", Status.OK, "12 partitions, all fully replicated"),
        Section("round_trip", Status.CRIT, "failing: broker 2", ("broker 1: stalled behind 2",), (2,)),
        Section("lag", Status.INFO, "0 groups, 0 read"),
        Section("slo", Status.INFO, "not available", ("no SLOs configured",)),
    )
    return Report("dev", ("127.0.0.1:9092",), sections, AT, 1.23456, 5.0)


def doc_rows(heading: str) -> list[list[str]]:
    """The cells of the table rows under `heading` in docs/check.md (up to the next `##`), header rows excluded."""
    part = DOC.read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")] for line in part.splitlines() if line.startswith("|")
    ]
    return [r for r in rows if r[0].startswith("`")]


def documented_keys(heading: str) -> set[str]:
    """The backticked names in the first column of the tables under `heading`."""
    return {key for row in doc_rows(heading) for key in re.findall(r"`([a-z_]+)`", row[0])}


def documented_details() -> dict[str, set[str]]:
    """Section name -> the `details` keys docs/check.md lists for it (second column)."""
    out: dict[str, set[str]] = {}
    for row in doc_rows("`details` per section"):
        section = row[0].strip("`")
        out.setdefault(section, set()).update(re.findall(r"`([a-z_]+)`", row[1]))
    return out


def test_json_has_exactly_the_documented_keys() -> None:
    doc = report_json(report())
    assert doc["schema"] == SCHEMA
    top_and_check_keys = documented_keys("## JSON")
    assert set(doc) <= top_and_check_keys
    for check in doc["checks"]:
        assert set(check) == {"name", "status", "summary", "reasons", "culprits", "details"}
    assert {"schema", "cluster", "status", "exit_code", "culprits", "checks"} <= top_and_check_keys
    json.dumps(doc)  # serialisable as printed


def test_json_carries_the_overall_verdict() -> None:
    doc = report_json(report())
    assert (doc["status"], doc["exit_code"], doc["culprits"]) == ("CRIT", 2, [2])
    assert doc["checked_at"] == "2026-01-01T12:00:00Z"
    assert doc["elapsed_s"] == 1.235
    assert [c["name"] for c in doc["checks"]] == ["brokers", "controller", "partitions", "round_trip", "lag", "slo"]
    assert doc["checks"][0]["culprits"] == [2]


def test_every_detail_key_the_verdicts_write_is_documented() -> None:
    sections = [
        add_slow_brokers(judge_brokers(meta(registered=(1, 2)), {1: probe(1), 2: probe(2)}), []),
        judge_controller(QuorumFacts("kraft", 1, 2, (VoterState(1, 0, 0.0),))),
        judge_partitions(meta()),
        judge_round_trip(trips(trip(0, 1), trip(1, 2), trip(2, 3)), (1, 2, 3)),
        add_noisy_neighbours(judge_lag(LagFacts(1, (GroupLag("g", "Stable", 3, 3, "t-0", 1),))), []),
        judge_slo(slo_facts(SloBudget("s", {}, 0.5)), AT + timedelta(seconds=30), 180),
    ]
    documented = documented_details()
    for section in sections:
        assert set(section.details) == documented[section.name], section.name


def test_table_names_the_status_the_culprit_and_the_exit_code() -> None:
    console = Console(record=True, width=120)
    print_report(report(), console)
    text = console.export_text()
    assert "canary round trip" in text and "CRIT" in text
    assert "brokers: broker 2 no answer" in text
    assert text.strip().splitlines()[-1].startswith("CRIT - broker 2 (exit 2, 1.2 s)")


def test_a_config_that_cannot_be_used_is_unknown_exit_3(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kafka_pulse.cli.main import cli

    result = CliRunner().invoke(cli, ["check", "--json", "--config", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert (doc["status"], doc["exit_code"]) == ("UNKNOWN", 3)
    (section,) = doc["checks"]
    assert section["name"] == "config" and "config file not found" in section["reasons"][0]


# --- the pure parsers behind the facts ----------------------------------------------------------------------------


def test_describe_quorum_answer_becomes_facts() -> None:
    now_s = 1_000_000.0
    answer = {
        "topics": [
            {
                "partitions": [
                    {
                        "leader_id": 3,
                        "leader_epoch": 4,
                        "high_watermark": 120,
                        "error": None,
                        "current_voters": [
                            {
                                "replica_id": 1,
                                "log_end_offset": 120,
                                "last_caught_up_timestamp": int(now_s * 1000) - 200,
                            },
                            {
                                "replica_id": 2,
                                "log_end_offset": 100,
                                "last_caught_up_timestamp": int(now_s * 1000) - 30_000,
                            },
                            {"replica_id": 3, "log_end_offset": 120, "last_caught_up_timestamp": -1},
                        ],
                    }
                ]
            }
        ],
    }
    got = quorum_facts(answer, now_s)
    assert isinstance(got, QuorumFacts)
    assert (got.mode, got.leader, got.epoch) == ("kraft", 3, 4)
    assert [(v.node, v.lag_records) for v in got.voters] == [(1, 0), (2, 20), (3, 0)]
    assert [v.caught_up_age_s for v in got.voters] == [pytest.approx(0.2), 30.0, None]


def test_describe_quorum_without_leader_and_malformed_answers() -> None:
    leaderless = {"topics": [{"partitions": [{"leader_id": -1, "leader_epoch": 9, "current_voters": []}]}]}
    got = quorum_facts(leaderless, 0.0)
    assert isinstance(got, QuorumFacts) and got.leader is None
    broken = quorum_facts({"topics": []}, 0.0)
    assert isinstance(broken, ProbeFailed) and broken.kind is FailureKind.ERROR


PUSHED = """\
# TYPE kafka_pulse_slo_error_budget_remaining_ratio gauge
kafka_pulse_slo_error_budget_remaining_ratio{instance="",job="kafka-pulse-slo",slo="produce",team="kafka"} 0.25
kafka_pulse_slo_error_budget_remaining_ratio{instance="",job="other",slo="produce"} -5
# TYPE kafka_pulse_slo_objective_ratio gauge
kafka_pulse_slo_objective_ratio{instance="",job="kafka-pulse-slo",slo="lag",team="kafka"} 0.99
# TYPE kafka_pulse_slo_alert_firing gauge
kafka_pulse_slo_alert_firing{instance="",job="kafka-pulse-slo",severity="page",slo="produce",team="kafka"} 1
kafka_pulse_slo_alert_firing{instance="",job="kafka-pulse-slo",severity="ticket",slo="produce",team="kafka"} 0
# TYPE kafka_pulse_slo_evaluation_timestamp_seconds gauge
kafka_pulse_slo_evaluation_timestamp_seconds{instance="",job="kafka-pulse-slo",slo="produce",team="kafka"} 1.7e9
"""


def test_pushgateway_gauges_become_budgets() -> None:
    got = pushgateway_budgets(PUSHED, "pushgateway:http://127.0.0.1:9091")
    assert isinstance(got, SloFacts)
    assert got.evaluated_at == datetime.fromtimestamp(1.7e9, tz=UTC)
    by_name = {b.name: b for b in got.budgets}
    assert by_name["produce"].budget_remaining == 0.25  # the other job's sample is ignored
    assert (by_name["produce"].page_firing, by_name["produce"].ticket_firing) == (True, False)
    assert by_name["produce"].labels == {"team": "kafka"}
    assert by_name["lag"].budget_remaining is None  # objective pushed, no events yet


def test_pushgateway_without_slo_gauges_is_not_available() -> None:
    assert isinstance(pushgateway_budgets("# TYPE up gauge\nup 1\n", "pushgateway:x"), NotAvailable)


def slo_result(name: str, remaining: float | None, page: bool, at: datetime) -> SloResult:
    return SloResult(
        name=name,
        labels={"cluster": "dev"},
        objective=99.9,
        window="30d",
        at=at,
        period_start=at - timedelta(days=30),
        period_end=None,
        good=990.0,
        total=1000.0,
        sli=0.99,
        budget_consumed=None,
        budget_remaining=remaining,
        burn_rates={"1h": 2.0},
        alerts=(AlertResult("page", page, ()), AlertResult("ticket", False, ())),
        exhaustion_at=None,
        projected_sli=None,
        projected_at=None,
        forecast_window="6h",
        budgeting="occurrences",
    )


def test_newest_parquet_of_the_slo_job_is_read(tmp_path: Path) -> None:
    write_results([slo_result("produce", 0.9, False, AT - timedelta(minutes=5))], tmp_path)
    write_results([slo_result("produce", -0.2, True, AT)], tmp_path)
    got = read_parquet(tmp_path)
    assert isinstance(got, SloFacts)
    assert got.evaluated_at == AT
    (budget,) = got.budgets
    assert (budget.budget_remaining, budget.page_firing, budget.labels) == (-0.2, True, {"cluster": "dev"})


def test_no_results_yet_or_no_slos_is_not_available(tmp_path: Path) -> None:
    assert isinstance(read_parquet(tmp_path / "missing"), NotAvailable)
    from kafka_pulse.check.probe.slo_budgets import read_slo_budgets

    got = read_slo_budgets(PulseConfig(), Deadline.after(1.0))
    assert isinstance(got, NotAvailable) and "no SLOs configured" in got.reason


# --- the deadline ---------------------------------------------------------------------------------------------------


def test_a_task_stuck_past_the_deadline_is_reported_and_abandoned() -> None:
    release = threading.Event()
    stuck: Task[int] = Task("hung broker", lambda: int(release.wait(60)))
    got = stuck.wait(Deadline.after(0.05))
    release.set()
    assert isinstance(got, ProbeFailed) and got.kind is FailureKind.TIMEOUT
    assert got.reason.startswith("hung broker: no answer within")


def test_first_success_wins_over_a_stuck_and_a_failed_task() -> None:
    done, release = threading.Event(), threading.Event()
    tasks: list[Task[str]] = [
        Task("a", lambda: ProbeFailed(FailureKind.UNREACHABLE, "a refused"), done),
        Task("b", lambda: str(release.wait(60)), done),
        Task("c", lambda: "metadata from c", done),
    ]
    assert first_success(tasks, done, Deadline.after(30)) == "metadata from c"
    release.set()


def test_all_failing_gives_the_most_telling_failure() -> None:
    done = threading.Event()
    tasks: list[Task[str]] = [
        Task("a", lambda: ProbeFailed(FailureKind.TIMEOUT, "a: timed out"), done),
        Task("b", lambda: ProbeFailed(FailureKind.REFUSED, "b: SASL authentication failed"), done),
    ]
    got = first_success(tasks, done, Deadline.after(30))
    assert got == ProbeFailed(FailureKind.REFUSED, "b: SASL authentication failed")


def test_at_the_deadline_the_timeout_also_says_how_the_finished_tasks_failed() -> None:
    """A metadata read that failed fast beside one still waiting: the report names both, or the fast failure's
    reason (the telling one) would be lost behind "no answer"."""
    done, release = threading.Event(), threading.Event()
    tasks: list[Task[str]] = [
        Task(
            "metadata from a", lambda: ProbeFailed(FailureKind.ERROR, "metadata from a: Broker: Not controller"), done
        ),
        Task("metadata from b", lambda: str(release.wait(60)), done),
    ]
    got = first_success(tasks, done, Deadline.after(0.2))
    release.set()
    assert isinstance(got, ProbeFailed) and got.kind is FailureKind.TIMEOUT
    assert "from metadata from b (metadata from a: Broker: Not controller)" in got.reason, got.reason


def test_process_age_is_read_from_proc() -> None:
    age = process_age_s()
    assert age is not None and age > 0
