"""librdkafka's own log lines and errors, rate-limited: while a cluster is unreachable every client logs each
reconnect attempt (about 1.6 KB/s on stderr by default, some 140 MB a day). Every confluent-kafka client of the
product is built with `settings(cluster)` of the limiter its process part shares (`limiter_for(registry)`): the
first line of each (cluster, kind) per `period_s` goes to Python logging, the rest are only counted, so an outage
reads as one line a minute per cause plus `kafka_pulse_librdkafka_logs_total` on that part's /metrics
(pulse/kafka_log_metrics.py).

With a `logger` set, librdkafka queues its lines until the client is polled: a client that is never polled (an
AdminClient used only through futures) must call `poll(0)` each cycle, or the lines pile up in memory unseen.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

_LOG = logging.getLogger("pulse.librdkafka")
PERIOD_S = 60.0


def log_kind(message: str) -> str:
    """The kind of a librdkafka log line, as the Python client hands it (`FAC [thread]: text`): its facility."""
    head = message.split(" ", 1)[0].strip()
    return head if head.isupper() and head.isalpha() and len(head) <= 20 else "OTHER"


class KafkaLogLimiter:
    """Counts and thins librdkafka's log lines and errors by (cluster, kind); thread-safe, one per process part."""

    def __init__(
        self,
        period_s: float = PERIOD_S,
        monotonic: Callable[[], float] = time.monotonic,
        max_level: int = logging.ERROR,
    ) -> None:
        """`max_level` caps the level lines are logged at: `check` passes DEBUG, its verdict says it better."""
        self.period_s = period_s
        self.max_level = max_level
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}
        self.counts: dict[tuple[str, str, str], int] = {}
        """(cluster, kind, outcome: logged|suppressed) -> lines."""

    def settings(self, cluster: str, on_error: Callable[[Any], None] | None = None) -> dict[str, Any]:
        """librdkafka settings (`logger`, `error_cb`) sending `cluster`'s clients' lines and errors here; a client
        that acts on its errors itself passes `on_error`, called with each error after it is counted."""
        return {"logger": _ClusterLog(self, cluster), "error_cb": _ErrorCallback(self, cluster, on_error)}

    def offer(self, cluster: str, kind: str, level: int, text: str) -> bool:
        """Log `text` if its (cluster, kind) has not logged within `period_s`; else count it. True when logged."""
        key = (cluster, kind)
        now = self._monotonic()
        with self._lock:
            last = self._last.get(key)
            logged = last is None or now - last >= self.period_s
            held = self._held.pop(key, 0) if logged else self._held.get(key, 0) + 1
            if logged:
                self._last[key] = now
            else:
                self._held[key] = held
            outcome = "logged" if logged else "suppressed"
            self.counts[(cluster, kind, outcome)] = self.counts.get((cluster, kind, outcome), 0) + 1
        if logged:
            more = f" ({held} more like it in the last {self.period_s:.0f} s)" if held else ""
            _LOG.log(min(level, self.max_level), "cluster %s: librdkafka %s: %s%s", cluster, kind, text, more)
        return logged

    def snapshot(self) -> dict[tuple[str, str, str], int]:
        """A copy of `counts`, for the collector."""
        with self._lock:
            return dict(self.counts)


def verdict_settings(cluster: str, on_error: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """`settings` for a short-lived client whose outcome is a verdict (`check`, a connection check): the same
    thinning, logged at DEBUG only, since the verdict names the failure better than reconnect chatter."""
    return KafkaLogLimiter(max_level=logging.DEBUG).settings(cluster, on_error)


_SHARED: weakref.WeakKeyDictionary[CollectorRegistry, KafkaLogLimiter] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def limiter_for(registry: CollectorRegistry) -> KafkaLogLimiter:
    """The one limiter of the process part serving `registry`, its counter registered there on first use: in `run`
    the canary, collectors and lag share one registry, hence one limiter and one `kafka_pulse_librdkafka_logs`."""
    with _SHARED_LOCK:
        limiter = _SHARED.get(registry)
        if limiter is None:
            from pulse.kafka_log_metrics import KafkaLogCollector  # prometheus_client: a check never registers one

            limiter = _SHARED[registry] = KafkaLogLimiter()
            registry.register(KafkaLogCollector(limiter.snapshot))
        return limiter


class _ClusterLog:
    """Stands in for a `logging.Logger` in librdkafka's `logger` setting, which calls only `log()`."""

    def __init__(self, limiter: KafkaLogLimiter, cluster: str) -> None:
        self.limiter = limiter
        self.cluster = cluster

    def log(self, level: int, msg: str, *args: object) -> None:
        text = msg % args if args else msg
        # librdkafka's syslog levels arrive mapped to Python's; its reconnect chatter is WARNING at most.
        self.limiter.offer(self.cluster, log_kind(text), min(level, logging.WARNING), text)


class _ErrorCallback:
    def __init__(self, limiter: KafkaLogLimiter, cluster: str, then: Callable[[Any], None] | None = None) -> None:
        self.limiter = limiter
        self.cluster = cluster
        self.then = then

    def __call__(self, error: Any) -> None:
        name = error.name() if hasattr(error, "name") else type(error).__name__
        text = error.str() if hasattr(error, "str") else str(error)
        level = logging.ERROR if getattr(error, "fatal", lambda: False)() else logging.WARNING
        self.limiter.offer(self.cluster, str(name), level, text)
        if self.then is not None:
            self.then(error)
