"""Commit probe outcomes: the name an attempt is counted under, the line an operator reads, and how often it is
logged (canary/commit_outcome.py). The defect behind them: a canary without Read on its commit group counted no
commit at all, neither ok nor error, and named no missing ACL anywhere."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from canary.commit_outcome import TIMED_OUT, CommitErrorLog, commit_error_message, commit_error_name


@dataclass(frozen=True)
class Case:
    answered: bool
    """The commit's callback fired within the timeout."""
    error: str | None
    partition_errors: tuple[str, ...]
    refusal: str | None
    """The last authorization failure reported outside the answer (consumer error, error_cb)."""
    want: str | None


@pytest.mark.parametrize(
    "case",
    [
        # the coordinator took the commit
        pytest.param(Case(True, None, (), None, None), id="ok"),
        # a refusal reported earlier and then lifted (the ACL was granted) does not taint an ok
        pytest.param(Case(True, None, (), "GROUP_AUTHORIZATION_FAILED", None), id="ok-after-refusal"),
        # Describe but no Read on the group: the coordinator answers OffsetCommit with the refusal itself
        pytest.param(Case(True, "GROUP_AUTHORIZATION_FAILED", (), None, "GROUP_AUTHORIZATION_FAILED"), id="refused"),
        # no Read on the topic: the refusal is per partition, the commit's own error empty
        pytest.param(
            Case(True, None, ("TOPIC_AUTHORIZATION_FAILED",), None, "TOPIC_AUTHORIZATION_FAILED"), id="topic-refused"
        ),
        # no Describe on the group: FindCoordinator is refused (reported once, as a consumer error), the commit
        # waits for a coordinator until librdkafka gives up on it
        pytest.param(
            Case(True, "_WAIT_COORD", ("_WAIT_COORD",), "GROUP_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"),
            id="wait-coord-after-refusal",
        ),
        # ... or until the probe's own deadline, first
        pytest.param(
            Case(False, None, (), "GROUP_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"), id="timeout-refused"
        ),
        # no coordinator and no known reason: the wait is what is named
        pytest.param(Case(True, "_WAIT_COORD", (), None, "_WAIT_COORD"), id="wait-coord"),
        # no answer at all within the timeout (a hung coordinator)
        pytest.param(Case(False, None, (), None, TIMED_OUT), id="timeout"),
        # a broker's answer is named over an older refusal: it is the newer fact
        pytest.param(
            Case(True, "NOT_COORDINATOR", (), "GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR"), id="broker-answer"
        ),
    ],
)
def test_commit_error_name(case: Case) -> None:
    assert commit_error_name(case.answered, case.error, case.partition_errors, case.refusal) == case.want


def test_a_refused_group_names_the_acl_to_grant() -> None:
    message = commit_error_message("prod", "__pulse_canary-commit", "__pulse_canary", "GROUP_AUTHORIZATION_FAILED", 2)
    assert message == (
        "cluster 'prod': canary commit probe: group '__pulse_canary-commit' refused (GROUP_AUTHORIZATION_FAILED): "
        "grant the canary's login Read on group '__pulse_canary-commit' (docs/security.md); every commit is counted "
        'as kafka_pulse_canary_offset_commits_total{result="error",error="GROUP_AUTHORIZATION_FAILED"} until then'
    )


def test_a_refused_topic_names_the_acl_to_grant() -> None:
    message = commit_error_message("prod", "g", "__pulse_canary", "TOPIC_AUTHORIZATION_FAILED", 2)
    assert "grant the canary's login Read on topic '__pulse_canary'" in message


def test_a_timeout_names_the_group_and_the_time() -> None:
    message = commit_error_message("prod", "g", "t", TIMED_OUT, 2.5)
    assert "cluster 'prod': canary commit probe: the commit for group 'g' was not answered within 2.5 s" in message


def test_a_lasting_error_is_logged_once() -> None:
    log = CommitErrorLog(period_s=60)
    logged = [log.should_log("GROUP_AUTHORIZATION_FAILED", now_s) for now_s in range(0, 600, 2)]
    assert logged == [True] + [False] * 299


def test_each_distinct_error_is_logged_and_an_ok_ends_a_run() -> None:
    log = CommitErrorLog(period_s=60)
    steps = [("A", 0), ("A", 1), ("B", 2), (None, 3), ("A", 4), (None, 100), ("A", 101), ("A", 102)]
    # A at 4 repeats A of 0 within the period: not logged again; at 101 the period has passed
    assert [log.should_log(error, now) for error, now in steps] == [True, False, True, False, False, False, True, False]


def test_alternating_errors_are_logged_once_a_period_each() -> None:
    log = CommitErrorLog(period_s=60)
    logged = [log.should_log("A" if n % 2 else "B", float(n)) for n in range(120)]
    assert logged.count(True) == 4  # A and B at 0-1, again at 60-61
