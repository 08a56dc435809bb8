"""The soak's judgement on hand-made readings (bench/soak_report.py)."""

from __future__ import annotations

import pytest
from soak_report import (
    DETECT_WITHIN_S,
    HEALED_AFTER_S,
    Fault,
    Sample,
    Verdict,
    false_verdict_lines,
    false_verdicts,
    growth_per_hour,
    markdown_rows,
    svg_plot,
)


def samples(rss: list[float]) -> list[Sample]:
    return [Sample(60.0 * i, r, 40, 90, 500.0, 0.0) for i, r in enumerate(rss)]


def test_flat_memory_has_no_growth_and_a_leak_shows_its_rate() -> None:
    assert growth_per_hour(samples([100.0] * 10), "rss_mb", warmup_s=0) == 0.0
    # +1 MB a minute around 100 MB after warm-up: 60 MB an hour over a mean of ~105 MB.
    leak = growth_per_hour(samples([50.0, 200.0] + [100.0 + i for i in range(12)]), "rss_mb", warmup_s=120)
    assert leak == pytest.approx(60.0 / 105.5, rel=1e-6)


def test_too_few_samples_past_warm_up_is_no_figure() -> None:
    assert growth_per_hour(samples([1.0, 2.0, 3.0]), "rss_mb", warmup_s=60) is None


def test_a_false_ok_and_a_stuck_alarm_are_counted_and_alertmanager_faults_never_are() -> None:
    faults = [Fault("kill", "broker 1", 100.0, 160.0), Fault("alertmanager", "alertmanager", 1000.0, 1120.0)]
    verdicts = [
        Verdict(50.0, "OK"),  # before any fault: right
        Verdict(100.0 + DETECT_WITHIN_S - 1, "OK"),  # the page's last refresh predates the fault: not judged
        Verdict(120.0, "OK"),  # broker down, page says OK: false
        Verdict(130.0, "ERR"),  # broker down: right
        Verdict(160.0 + HEALED_AFTER_S - 1, "WARN"),  # still healing: not judged
        Verdict(160.0 + HEALED_AFTER_S + 1, "WARN"),  # healed long ago: false alarm
        Verdict(1050.0, "OK"),  # Alertmanager down does not make the cluster broken
    ]
    assert false_verdicts(verdicts, faults, frozenset({"kill", "pause"})) == {
        "ok_while_broken": 1,
        "alarm_when_healed": 1,
        "faults_missed": 0,
    }


def test_a_fault_never_seen_is_missed_and_the_loads_outage_only_excuses_alarms() -> None:
    faults = [Fault("pause", "broker 2", 100.0, 130.0), Fault("load", "traffic", 400.0, 410.0)]
    verdicts = [
        Verdict(105.0, "OK"),  # within the detection window
        Verdict(200.0, "OK"),
        Verdict(405.0, "OK"),  # the load being down does not make OK false
        Verdict(410.0 + HEALED_AFTER_S - 1, "WARN"),  # lag still judged on the outage's commits
    ]
    assert false_verdicts(verdicts, faults, frozenset({"kill", "pause"}), frozenset({"load"})) == {
        "ok_while_broken": 0,
        "alarm_when_healed": 0,
        "faults_missed": 1,
    }


def test_the_plot_names_each_row_and_escapes_fault_labels() -> None:
    svg = svg_plot(samples([1.0, 2.0, 3.0]), [Fault("kill", "<b>", 0.0, 60.0)])
    assert svg.startswith("<svg") and "RSS of run (MB)" in svg and "open files" in svg
    assert "&lt;b&gt;" in svg and "<b>" not in svg


def test_the_docs_rows_take_the_nearest_sample_and_false_verdicts_are_listed_with_reasons() -> None:
    rows = markdown_rows(samples([100.0, 101.0, 102.0]), [0, 2])
    assert rows[2] == "| 0 | 100 MB | 500 MB | 40 | 90 | 0 |"
    assert rows[3].startswith("| 2 | 102 MB |")
    faults = [Fault("pause", "broker 2", 60.0, 90.0)]
    verdicts = [Verdict(80.0, "OK"), Verdict(90.0 + HEALED_AFTER_S + 60, "WARN", ("brokers: slow: broker 2",))]
    assert false_verdict_lines(verdicts, faults, frozenset({"pause"}), frozenset()) == [
        "- minute 1.3, ok_while_broken: OK; ",
        "- minute 7.5, alarm_when_healed: WARN; brokers: slow: broker 2",
    ]


def test_an_overspent_budget_stays_true_after_healing_but_a_stuck_broker_flag_does_not() -> None:
    faults = [Fault("kill", "broker 1", 1000.0, 1060.0)]
    late = 1060.0 + HEALED_AFTER_S + 60
    budget = ("controller: not available", "slo: 1 SLO; lowest budget: availability -250.0% left")
    slow = ("brokers: 3/3 brokers answer; slow: broker 1", "broker 1: broker 1 is slow (recovering)")
    verdicts = [Verdict(late, "CRIT", budget), Verdict(late, "WARN", slow), Verdict(400.0, "CRIT", budget[1:])]
    verdicts.append(Verdict(1030.0, "CRIT", ("brokers: 2/3 brokers answer",)))  # the fault, seen
    assert false_verdicts(verdicts, faults, frozenset({"kill"})) == {
        "ok_while_broken": 0,
        "alarm_when_healed": 2,  # the flag long after healing, and a budget overspent before any fault
        "faults_missed": 0,
    }
