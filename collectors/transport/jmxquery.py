"""`JmxqueryTransport`: all queries of a scrape in one run of the `jmxquery` package's jar (a JVM forked per call).

It runs the jar itself rather than through the package's `JMXConnection.query`, which on timeout kills the JVM and
then waits for it to exit (0.1-0.8 s under load, more in CI) before crashing on a None output: here the JVM is killed
at the scrape's deadline and reaped off the scrape's thread, so a hung broker's scrape ends at `timeout_s`. It
disarms the package's other defects: the attribute key it ignores is picked in `mapping.py`; a value with an
unescaped quote or backslash, which breaks the whole batch's JSON, is isolated by splitting the batch. It refuses
brokers with JMX credentials or TLS, because the jar takes the password as a command-line argument.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from collections.abc import Sequence

from collectors.catalogue import BeanQuery, Reading
from collectors.transport.contract import JmxTimeout, JmxUnreachable, number_or_string, service_url
from pulse.config import JmxBrokerConfig
from pulse.errors import ConfigError

_LOG = logging.getLogger(__name__)
_JAR_NUMBER_TYPES = frozenset({"Byte", "Short", "Float", "BigInteger", "BigDecimal", "AtomicInteger", "AtomicLong"})
"""Java types the jmxquery jar prints as JSON strings although they hold numbers."""


class _BatchAborted(JmxUnreachable):
    """jmxquery's jar gave up on a batch half-way ("general-exception"), typically a bean that disappeared."""


class JmxqueryTransport:
    """All queries of a scrape in one `jmxquery` call (one JVM fork), with a strict time limit."""

    def __init__(self, broker: JmxBrokerConfig, timeout_s: float, java_path: str = "java") -> None:
        if broker.username is not None or broker.ssl:
            what = "credentials" if broker.username is not None else "TLS trust-store settings"
            raise ConfigError(
                f"jmx.brokers (broker {broker.broker_id}): the jmxquery transport would pass the JMX {what} on "
                "the command line of its Java process; set collectors.transport to jpype"
            )
        from jmxquery import JAR_PATH

        self.broker = broker
        self.timeout_s = timeout_s
        self._command = [java_path, "-jar", JAR_PATH, "-url", service_url(broker), "-json", "-q"]
        self.dropped: list[BeanQuery] = []
        """Queries left out of the last scrape because their values broke jmxquery's JSON."""

    def read(self, queries: Sequence[BeanQuery]) -> list[Reading]:
        self.dropped = []
        deadline = time.monotonic() + self.timeout_s
        try:
            return self._read_batch(list(queries), deadline)
        except _BatchAborted:
            # The jar aborts the whole batch when a matched bean vanishes before its attributes are read (Kafka
            # creates and removes RequestMetrics version beans at run time). A second try sees the new set.
            self.dropped = []
            return self._read_batch(list(queries), deadline)

    def _read_batch(self, queries: list[BeanQuery], deadline: float) -> list[Reading]:
        try:
            return self._call(queries, deadline)
        except json.JSONDecodeError:
            # Defect 2: one value with a quote or backslash spoils the whole batch's JSON. Halve the batch until
            # the bad query stands alone, keep everything else, and name the one left out.
            if len(queries) == 1:
                _LOG.warning(
                    "broker %s: %s returns a value jmxquery cannot encode; skipped",
                    self.broker.broker_id,
                    queries[0].pattern,
                )
                self.dropped.append(queries[0])
                return []
            middle = len(queries) // 2
            return self._read_batch(queries[:middle], deadline) + self._read_batch(queries[middle:], deadline)

    def _call(self, queries: list[BeanQuery], deadline: float) -> list[Reading]:
        from jmxquery import JMXQuery

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout()
        query = "".join(JMXQuery(q.pattern, attribute=a).to_query_string() + ";" for q in queries for a in q.attributes)
        process = subprocess.Popen([*self._command, query], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = process.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            # The deadline counts from the scrape's start (the JVM's start-up included); the JVM is killed at it and
            # reaped on a thread of its own, since a killed JVM can take a second to exit on a loaded host.
            process.kill()
            threading.Thread(target=process.communicate, name=f"jmxquery-reap-{process.pid}", daemon=True).start()
            raise self._timeout() from None
        if process.returncode != 0:
            reason = _jar_error(out, err, process.returncode)
            kind = _BatchAborted if reason.startswith("general-exception") else JmxUnreachable
            raise kind(f"broker {self.broker.broker_id} JMX at {self._where()}: {reason}")
        readings = []
        for result in json.loads(out.decode("utf-8")):
            value = number_or_string(result.get("value"))
            if isinstance(value, str) and result.get("attributeType") in _JAR_NUMBER_TYPES:
                # The jar writes only Integer, Long, Double and Boolean as JSON numbers; BrokerState is a Byte.
                try:
                    value = float(value)
                except ValueError:
                    continue
            if value is not None:
                readings.append(Reading(result["mBeanName"], result["attribute"], value, result.get("attributeKey")))
        return readings

    def _where(self) -> str:
        return f"{self.broker.host}:{self.broker.port}"

    def _timeout(self) -> JmxTimeout:
        return JmxTimeout(f"broker {self.broker.broker_id} JMX at {self._where()}: no answer in {self.timeout_s:g} s")

    def close(self) -> None:
        """Nothing to release: every call is its own process."""


def _jar_error(out: bytes, err: bytes, returncode: int) -> str:
    """The jar prints `{"error": ..., "message": ...}` and exits 2 on connect or query failure."""
    text = out.decode(errors="replace") + err.decode(errors="replace")
    try:
        parsed = json.loads(text)
        return f"{parsed.get('error')}: {parsed.get('message')}"
    except (json.JSONDecodeError, AttributeError):
        return text.strip()[-300:] or f"jmxquery exited with status {returncode}"
