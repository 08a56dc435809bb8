"""What one attempt of the commit probe came to, and what an operator is told about a failure (pure: the Kafka side
is canary/commit_probe.py, the counting canary/metrics.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TIMED_OUT = "_TIMED_OUT"
"""librdkafka's name for a local timeout: the commit was not answered within the probe's timeout."""
LOG_PERIOD_S = 60.0
"""The same error is logged at most once in this long, should it alternate with others."""


@dataclass(frozen=True)
class CommitResult:
    """One counted commit attempt."""

    ok: bool
    latency_s: float
    """Sent to answered (an ok commit), or how long the attempt waited."""
    error: str | None = None
    """Kafka's error name (`GROUP_AUTHORIZATION_FAILED`, librdkafka's `_TIMED_OUT`, ...); None when ok."""


def is_refusal(name: str) -> bool:
    """Whether `name` is an authorization failure: it lasts until an ACL is granted, unlike a timeout."""
    return name.endswith("_AUTHORIZATION_FAILED")


def commit_error_name(
    answered: bool, error: str | None, partition_errors: Sequence[str], refusal: str | None
) -> str | None:
    """The name a commit attempt is counted under; None when it succeeded.

    `error` and `partition_errors` are the commit's answer (when `answered`); `refusal` is the last authorization
    failure the client reported elsewhere. A group the login may not describe is refused at FindCoordinator, which
    librdkafka reports once as a consumer error while the commit itself only waits for a coordinator (`_WAIT_COORD`,
    or no answer in time): that refusal, not the wait, is what the operator must act on.
    """
    names = [name for name in (error, *partition_errors) if name]
    if answered and not names:
        return None
    from_broker = next((name for name in names if not name.startswith("_")), None)
    if from_broker is not None:
        return from_broker
    if refusal is not None:
        return refusal
    return names[0] if names else TIMED_OUT


def commit_error_message(cluster: str, group: str, topic: str, error: str, timeout_s: float) -> str:
    """The log line for a failing commit: what failed, where, and the ACL to grant when it is a refusal."""
    head = f"cluster '{cluster}': canary commit probe"
    counted = f'counted as kafka_pulse_canary_offset_commits_total{{result="error",error="{error}"}}'
    if error == "GROUP_AUTHORIZATION_FAILED":
        return (
            f"{head}: group '{group}' refused ({error}): grant the canary's login Read on group '{group}' "
            f"(docs/security.md); every commit is {counted} until then"
        )
    if error == "TOPIC_AUTHORIZATION_FAILED":
        return (
            f"{head}: committing on topic '{topic}' for group '{group}' refused ({error}): grant the canary's login "
            f"Read on topic '{topic}' (docs/security.md); every commit is {counted} until then"
        )
    if error == TIMED_OUT:
        return f"{head}: the commit for group '{group}' was not answered within {timeout_s:g} s ({error}); {counted}"
    return f"{head}: the commit for group '{group}' failed ({error}); {counted}"


class CommitErrorLog:
    """Which failed attempts to log: the first of each run of one error (an ok attempt or another error ends the
    run), and a given error at most once per `period_s`, so a lasting refusal is one line, not one per interval."""

    def __init__(self, period_s: float = LOG_PERIOD_S) -> None:
        self.period_s = period_s
        self._current: str | None = None
        self._logged_at: dict[str, float] = {}

    def should_log(self, error: str | None, now_s: float) -> bool:
        """Record an attempt's error (None: ok) at `now_s`; True when it is to be logged."""
        if error is None or error == self._current:
            self._current = error
            return False
        self._current = error
        last = self._logged_at.get(error)
        if last is not None and now_s - last < self.period_s:
            return False
        self._logged_at[error] = now_s
        return True
