"""The check's per-broker probes (ApiVersions on a connection of each broker's own), all started at once under one
deadline, and what the rest of the check learns from them while they run: which brokers answered, to bootstrap
the later clients from, and which are down, so work stalled behind a down broker stops waiting for it.

A SIGSTOPped broker accepts connections and never answers: its probe is only known to fail at the deadline, so the
later reads start once the others have answered (`answered`) instead of waiting for it.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial

from kafka_pulse.check.deadline import Deadline, Task
from kafka_pulse.check.facts import BrokerAddress, BrokerProbe
from pulse.config import ClusterConfig
from pulse.kafka.broker_probe import CheckResult, check_broker, tls_context

SETTLE_S = 0.25
"""Once one broker has answered, how long the others get before the later reads start without them. A broker left
out is still probed to the deadline; it is only not a bootstrap server of the later clients."""
SILENT = "timeout"
"""The probe error of a broker that accepts connections and never answers (hung, or starved)."""

Ask = Callable[[BrokerAddress, Deadline], CheckResult]
"""One probe of one broker within a deadline; never raises."""


def ask_api_versions(context: ssl.SSLContext | None, broker: BrokerAddress, limit: Deadline) -> CheckResult:
    return check_broker(broker.id, broker.host, broker.port, limit.remaining(), context)


class BrokerWatch:
    """ApiVersions to every broker in `brokers`, started at construction, each answered by `limit` or a timeout."""

    def __init__(
        self,
        cluster: ClusterConfig,
        brokers: Mapping[int, BrokerAddress],
        limit: Deadline,
        ask: Ask | None = None,
    ) -> None:
        """`ask` replaces the ApiVersions exchange (tests)."""
        probe = ask or partial(ask_api_versions, tls_context(cluster))
        self._brokers = dict(brokers)
        self._limit = limit
        self._done = threading.Event()
        self._tasks: dict[int, Task[CheckResult]] = {
            b.id: Task(f"broker {b.id}", partial(probe, b, limit), self._done) for b in self._brokers.values()
        }

    def outcome(self, broker: int) -> BrokerProbe | None:
        """The probe of `broker` so far: None while it may still answer; a timeout once `limit` has passed."""
        task = self._tasks[broker]
        result = task.result()
        if isinstance(result, CheckResult):
            return BrokerProbe(broker, result.ok, result.latency_s, result.error)
        if result is not None or self._limit.expired:  # a ProbeFailed: the probe itself broke, or no answer in time
            return BrokerProbe(broker, False, time.monotonic() - task.started_s, SILENT)
        return None

    def answered(self, settle_s: float = SETTLE_S) -> list[str]:
        """`host:port` of the brokers that answered, once every probe is over, or `settle_s` after the first answer,
        or at the limit: the later reads start from these, not held by a broker that may never answer."""
        settle: Deadline | None = None
        while True:
            self._done.clear()
            outcomes = {b: self.outcome(b) for b in self._tasks}
            ok = {b for b, o in outcomes.items() if o is not None and o.ok}
            if ok and settle is None:
                settle = self._limit.earlier(settle_s)
            if all(o is not None for o in outcomes.values()) or (settle or self._limit).expired:
                return [f"{a.host}:{a.port}" for b, a in sorted(self._brokers.items()) if b in ok]
            self._done.wait(min((settle or self._limit).remaining(), 0.05) or 0.001)

    def down(self) -> frozenset[int]:
        """The brokers known so far not to answer: probe failed, or no answer by the limit. Safe from any thread."""
        return frozenset(b for b in self._tasks if (o := self.outcome(b)) is not None and not o.ok)

    def results(self) -> dict[int, BrokerProbe]:
        """Every broker's probe, waiting for each until the limit at most."""
        out: dict[int, BrokerProbe] = {}
        for broker, task in self._tasks.items():
            task.wait(self._limit)
            out[broker] = self.outcome(broker) or BrokerProbe(broker, False, time.monotonic() - task.started_s, SILENT)
        return out
