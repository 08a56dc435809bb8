"""How every long-running command lives: parts built from config (connecting to nothing), started in order,
stopped in reverse, until SIGTERM or Ctrl-C; and the one logging setup those commands share."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pulse.redact import RedactingFormatter

_LOG = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class Service(Protocol):
    """A part of a running command: `start` connects and returns once running, `stop` undoes it."""

    def start(self) -> Any: ...

    def stop(self) -> Any: ...


@dataclass(frozen=True)
class Part:
    """A service with the words a status line uses for it."""

    name: str
    service: Service
    description: str = ""


class Parts:
    """Parts started in the order given, stopped in reverse; a part failing to start stops those started before."""

    def __init__(self, parts: Iterable[Part] = ()) -> None:
        self.parts: list[Part] = list(parts)
        self._started: list[Part] = []

    @property
    def running(self) -> bool:
        """Every part started and none stopped yet."""
        return bool(self.parts) and len(self._started) == len(self.parts)

    def start(self) -> None:
        try:
            for part in self.parts:
                part.service.start()
                self._started.append(part)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop what was started, in reverse; a part failing to stop is logged and the others still stop."""
        while self._started:
            part = self._started.pop()
            try:
                part.service.stop()
            except Exception:
                _LOG.exception("stopping %s failed", part.name)


PINNED_LOGGERS = (
    "kafka", "confluent_kafka", "py4j", "pyspark", "jpype", "urllib3", "requests", "httpx", "httpcore", "h11", "h2",
    "hpack",
)  # fmt: skip
"""Third-party loggers that print a client's config or a request's headers below WARNING (kafka-python logs its
whole config, passwords included, when an admin client starts): kept at WARNING or above whatever the root level,
also after `/v3/admin/loglevel` sets it to debug. Their children (`kafka.conn`) follow."""


def _pinned(name: str) -> bool:
    return any(name == pin or name.startswith(f"{pin}.") for pin in PINNED_LOGGERS)


class ThirdPartyFloor(logging.Filter):
    """On the handler: a pinned logger's record passes only at WARNING or above, and not below the root level, even
    if someone lowers that logger's own level."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _pinned(record.name):
            return True
        return record.levelno >= max(logging.WARNING, logging.getLogger().getEffectiveLevel())


def configure_logging(level: int = logging.WARNING, quieter: Mapping[str, int] | None = None) -> None:
    """Logs to stderr, one line each with time, level and logger, secrets redacted (pulse/redact.py), the
    third-party loggers pinned (PINNED_LOGGERS); `quieter` raises some further (`check`: kafka at CRITICAL)."""
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    handler.addFilter(ThirdPartyFloor())
    logging.basicConfig(level=level, handlers=[handler])
    for name in PINNED_LOGGERS:
        pinned = logging.getLogger(name)
        pinned.setLevel(max(logging.WARNING, pinned.level))
    for name, floor in (quieter or {}).items():
        logging.getLogger(name).setLevel(floor)


def run_until_signal(service: Service, started: Callable[[], None] = lambda: None) -> None:
    """Start `service`, call `started`, wait for SIGTERM or SIGINT, then stop it (also when starting fails)."""
    stopped = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        service.start()
        started()
        # Short waits, not one long one: a signal may land on a JVM or librdkafka thread, and Python runs its
        # handler only when the main thread gets back to bytecode.
        while not stopped.wait(0.5):
            pass
    finally:
        service.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
