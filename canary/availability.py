"""Per-broker produce availability over a sliding window, each failed probe charged to the broker at fault (pure).

Rules (attribution is the gap Xinfra Monitor's issue #91 left open):
  1. A probe acknowledged within the latency SLO is good, for the partition leader it was sent to.
  2. A probe is bad when its produce failed, when it was acknowledged later than the SLO, when it is still
     unacknowledged at the SLO, or at once when its leader is known to be down while it waits.
  3. A bad probe is charged to the brokers its write waited on that are down: to those found dead (connection
     refused: no process listens) if any, else to its leader if it is down, else to the down followers; when
     none is down, to its leader. A write that waits on a dead broker cannot complete whatever the others do,
     while a live broker that missed one check on a loaded host is at most a co-suspect.
     It waited on its leader and, with acks=all, on every in-sync follower at send time: one dead follower stalls
     the healthy leaders it follows until the controller fences it and drops it from the in-sync sets (on the
     dev cluster every partition stalled ~8.5 s after kill -9 of one broker). It also waited on brokers that
     left the partition's leadership or in-sync set just before the send (within the producer's grace, latency
     SLO + 2 metadata refreshes): the canary's metadata, the leader's and the client's catch up with such a
     change over a moment, and the client is still recovering from the stall (requests timed out in flight
     close the connection; the idempotent producer drains and bumps its epoch). The cause is the departed
     broker, so the failure is its (3b).
  4. A verdict waits for a health view taken after the probe turned bad (at most `max_defer_s`), and once given,
     it is frozen: a broker that comes back does not make old failures someone else's.
Availability of a broker = good / (good + bad) over the probes sent within the window and charged to it; None
(unknown) when there are none. A probe charged to a down follower is not counted for its leader at all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BrokerHealth:
    """Which brokers the canary cannot reach, and when that view was taken (monotonic seconds)."""

    down: frozenset[int]
    as_of: float
    dead: frozenset[int] = frozenset()
    """Those of `down` that refused the connection (or reset it): no broker process there at all."""


@dataclass
class _Attempt:
    partition: int
    sequence: int
    sent_s: float
    leader: int | None
    in_sync: frozenset[int]
    departed: frozenset[int] = frozenset()
    latency_s: float | None = None
    failed_s: float | None = None
    bad_since: float | None = None
    charged: tuple[int, ...] | None = None
    """Brokers the verdict counts for; empty when nobody can be named (no leader known)."""
    good: bool | None = None


@dataclass(frozen=True)
class Verdict:
    """One probe's judgement, as given (rules 1-4): what a debugger or a test reads back."""

    partition: int
    sequence: int
    sent_s: float
    """Monotonic send time."""
    charged: tuple[int, ...]
    """The brokers it counts for (empty: no leader was known)."""
    good: bool


@dataclass(frozen=True)
class Availability:
    """One broker's verdicts in the window."""

    good: int
    bad: int

    @property
    def ratio(self) -> float | None:
        total = self.good + self.bad
        return self.good / total if total else None


@dataclass
class AvailabilityWindow:
    """Probe attempts of the last `window_s` seconds and their verdicts; not thread-safe."""

    window_s: float
    slo_s: float
    max_defer_s: float
    _attempts: deque[_Attempt] = field(default_factory=deque)
    _open: dict[tuple[int, int], _Attempt] = field(default_factory=dict)

    def sent(
        self,
        partition: int,
        sequence: int,
        now: float,
        leader: int | None,
        in_sync: frozenset[int],
        departed: frozenset[int] = frozenset(),
    ) -> None:
        """`in_sync` and `departed` as the canary saw them at send time (`view.PartitionLeader`)."""
        attempt = _Attempt(partition, sequence, now, leader, in_sync, departed)
        self._attempts.append(attempt)
        self._open[(partition, sequence)] = attempt

    def acked(self, partition: int, sequence: int, latency_s: float) -> None:
        attempt = self._open.get((partition, sequence))
        if attempt is not None:
            attempt.latency_s = latency_s

    def failed(self, partition: int, sequence: int, now: float) -> None:
        attempt = self._open.get((partition, sequence))
        if attempt is not None:
            attempt.failed_s = now

    def judge(self, now: float, health: BrokerHealth) -> list[Verdict]:
        """Give verdicts that can be given now (rules 1-4), return them, and drop attempts that left the window."""
        given: list[Verdict] = []
        for attempt in list(self._open.values()):
            if self._judge(attempt, now, health):
                del self._open[(attempt.partition, attempt.sequence)]
                given.append(
                    Verdict(
                        attempt.partition, attempt.sequence, attempt.sent_s, attempt.charged or (), bool(attempt.good)
                    )
                )
        while self._attempts and self._attempts[0].sent_s < now - self.window_s:
            old = self._attempts.popleft()
            self._open.pop((old.partition, old.sequence), None)
        return given

    def undecided(self, sent_until: float) -> int:
        """Probes sent up to `sent_until` still waiting for their verdict."""
        return sum(1 for a in self._open.values() if a.sent_s <= sent_until)

    def availability(self, now: float) -> dict[int, Availability]:
        """Verdicts per broker over the probes sent in (now - window_s, now]."""
        good: dict[int, int] = {}
        bad: dict[int, int] = {}
        for attempt in self._attempts:
            if attempt.sent_s < now - self.window_s or attempt.good is None or attempt.charged is None:
                continue
            tally = good if attempt.good else bad
            for broker in attempt.charged:
                tally[broker] = tally.get(broker, 0) + 1
        return {b: Availability(good.get(b, 0), bad.get(b, 0)) for b in sorted(good.keys() | bad.keys())}

    def _judge(self, attempt: _Attempt, now: float, health: BrokerHealth) -> bool:
        if attempt.latency_s is not None and attempt.latency_s <= self.slo_s and attempt.bad_since is None:
            attempt.good, attempt.charged = True, _named(attempt.leader)  # rule 1
            return True
        if attempt.bad_since is None:
            attempt.bad_since = self._bad_since(attempt, now, health)  # rule 2
        if attempt.bad_since is None:
            return False
        if health.as_of < attempt.bad_since and now - attempt.bad_since < self.max_defer_s:
            return False  # rule 4: wait for a health view that saw the fault
        attempt.good, attempt.charged = False, _blame(attempt, health)  # rule 3
        return True

    def _bad_since(self, attempt: _Attempt, now: float, health: BrokerHealth) -> float | None:
        if attempt.failed_s is not None:
            return attempt.failed_s
        overdue_s = attempt.sent_s + self.slo_s
        if attempt.latency_s is not None:  # acknowledged, but later than the SLO
            return overdue_s
        if now >= overdue_s:
            return overdue_s
        if attempt.leader is not None and attempt.leader in health.down:
            return health.as_of
        return None


def tally(verdicts: Iterable[Verdict]) -> dict[int, Availability]:
    """Availability per broker over the given verdicts (those of a chosen span of send times, say)."""
    good: dict[int, int] = {}
    bad: dict[int, int] = {}
    for verdict in verdicts:
        counts = good if verdict.good else bad
        for broker in verdict.charged:
            counts[broker] = counts.get(broker, 0) + 1
    return {b: Availability(good.get(b, 0), bad.get(b, 0)) for b in sorted(good.keys() | bad.keys())}


def _named(broker: int | None) -> tuple[int, ...]:
    return () if broker is None else (broker,)


def _blame(attempt: _Attempt, health: BrokerHealth) -> tuple[int, ...]:
    """Rule 3: the dead brokers the write waited on, else a down leader, else the down followers, else the leader."""
    if attempt.leader is None:
        return ()
    followers = (attempt.in_sync | attempt.departed) - {attempt.leader}
    dead = sorted(({attempt.leader} | followers) & health.dead & health.down)
    if dead:
        return tuple(dead)
    if attempt.leader in health.down:
        return (attempt.leader,)
    culprits = sorted(followers & health.down)
    return tuple(culprits) if culprits else (attempt.leader,)
