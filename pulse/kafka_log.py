"""librdkafka's own log lines and errors, rate-limited: while a cluster is unreachable every client logs each
reconnect attempt (about 1.6 KB/s on stderr by default, some 140 MB a day). Clients built with `settings(cluster)`
send them here instead: the first line of each (cluster, kind) per `period_s` goes to Python logging, the rest are
only counted, so an outage reads as one line a minute per cause plus `kafka_pulse_librdkafka_logs_total`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

_LOG = logging.getLogger("pulse.librdkafka")
PERIOD_S = 60.0


def log_kind(message: str) -> str:
    """The kind of a librdkafka log line, as the Python client hands it (`FAC [thread]: text`): its facility."""
    head = message.split(" ", 1)[0].strip()
    return head if head.isupper() and head.isalpha() and len(head) <= 20 else "OTHER"


class KafkaLogLimiter:
    """Counts and thins librdkafka's log lines and errors by (cluster, kind); thread-safe, one per process part."""

    def __init__(self, period_s: float = PERIOD_S, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.period_s = period_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}
        self.counts: dict[tuple[str, str, str], int] = {}
        """(cluster, kind, outcome: logged|suppressed) -> lines."""

    def settings(self, cluster: str) -> dict[str, Any]:
        """librdkafka settings (`logger`, `error_cb`) sending `cluster`'s clients' lines and errors here."""
        return {"logger": _ClusterLog(self, cluster), "error_cb": _ErrorCallback(self, cluster)}

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
            _LOG.log(level, "cluster %s: librdkafka %s: %s%s", cluster, kind, text, more)
        return logged

    def snapshot(self) -> dict[tuple[str, str, str], int]:
        """A copy of `counts`, for the collector."""
        with self._lock:
            return dict(self.counts)


class DebugLog:
    """librdkafka's `logger` for clients whose state is reported elsewhere (a verdict, /metrics): every line goes to
    Python logging at DEBUG under `name`, since a broker down makes each client log every reconnect."""

    def __init__(self, name: str) -> None:
        self._log = logging.getLogger(name)

    def log(self, level: int, msg: str, *args: object) -> None:
        self._log.debug(msg, *args)


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
    def __init__(self, limiter: KafkaLogLimiter, cluster: str) -> None:
        self.limiter = limiter
        self.cluster = cluster

    def __call__(self, error: Any) -> None:
        name = error.name() if hasattr(error, "name") else type(error).__name__
        text = error.str() if hasattr(error, "str") else str(error)
        level = logging.ERROR if getattr(error, "fatal", lambda: False)() else logging.WARNING
        self.limiter.offer(self.cluster, str(name), level, text)


class KafkaLogCollector(Collector):
    def __init__(self, limiter: KafkaLogLimiter) -> None:
        self.limiter = limiter

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "kafka_pulse_librdkafka_logs",
            "librdkafka log lines and errors by cluster and kind; suppressed ones were only counted (one a minute "
            "per kind is logged).",
            labels=["cluster", "kind", "outcome"],
        )
        for (cluster, kind, outcome), count in sorted(self.limiter.snapshot().items()):
            family.add_metric([cluster, kind, outcome], count)
        yield family
