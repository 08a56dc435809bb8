"""The canary's view of broker health: the latest connection check of each broker (pulse/kafka/broker_probe.py),
published as a `BrokerHealth` for the availability rules as each check completes (pure)."""

from __future__ import annotations

from canary.availability import BrokerHealth
from pulse.kafka.broker_probe import CheckResult


class HealthBoard:
    """The latest check of each broker, so a view can be published as each check completes (pure)."""

    def __init__(self) -> None:
        self._latest: dict[int, tuple[float, CheckResult]] = {}

    def record(self, started_s: float, result: CheckResult) -> None:
        """`result` of a check started at `started_s` (monotonic); an older check finishing late is ignored."""
        previous = self._latest.get(result.broker)
        if previous is None or previous[0] <= started_s:
            self._latest[result.broker] = (started_s, result)

    def view(self) -> BrokerHealth:
        """Down and dead brokers by their latest checks; `as_of` is the oldest of those checks' starts, so a view
        "taken after T" means every broker was checked after T (availability rule 4)."""
        if not self._latest:
            return BrokerHealth(frozenset(), as_of=-1.0)
        down = frozenset(b for b, (_, r) in self._latest.items() if not r.ok)
        dead = frozenset(b for b, (_, r) in self._latest.items() if r.is_dead)
        return BrokerHealth(down, as_of=min(t for t, _ in self._latest.values()), dead=dead)
