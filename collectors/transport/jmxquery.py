"""`JmxqueryTransport`: all queries of a scrape in one call of the `jmxquery` package (a JVM forked per call).

It disarms the package's defects: the attribute key it ignores is picked in `mapping.py`; a value with an unescaped
quote or backslash, which breaks the whole batch's JSON, is isolated by splitting the batch; its crash on timeout
becomes `JmxTimeout`. It refuses brokers with JMX credentials or TLS, because the jar takes the password as a
command-line argument.
"""

from __future__ import annotations

import json
import logging
import subprocess
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
        from jmxquery import JMXConnection

        self.broker = broker
        self.timeout_s = timeout_s
        self._connection = JMXConnection(service_url(broker), java_path=java_path)
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
        jmx_queries = [JMXQuery(q.pattern, attribute=a) for q in queries for a in q.attributes]
        started = time.monotonic()
        try:
            results = self._connection.query(jmx_queries, timeout=remaining)
        except subprocess.CalledProcessError as exc:
            reason = _jar_error(exc)
            kind = _BatchAborted if reason.startswith("general-exception") else JmxUnreachable
            raise kind(f"broker {self.broker.broker_id} JMX at {self._where()}: {reason}") from exc
        except (AttributeError, subprocess.TimeoutExpired) as exc:
            # Defect 3: on timeout jmxquery calls .decode() on a None output; the killed JVM is reaped by then.
            raise self._timeout() from exc
        if not results and time.monotonic() - started >= remaining * 0.95:
            raise self._timeout()  # the other timeout path: jmxquery logs and returns an empty list
        readings = []
        for result in results:
            value = number_or_string(result.value)
            if isinstance(value, str) and result.value_type in _JAR_NUMBER_TYPES:
                # The jar writes only Integer, Long, Double and Boolean as JSON numbers; BrokerState is a Byte.
                try:
                    value = float(value)
                except ValueError:
                    continue
            if value is not None:
                readings.append(Reading(result.mBeanName, result.attribute, value, result.attributeKey))
        return readings

    def _where(self) -> str:
        return f"{self.broker.host}:{self.broker.port}"

    def _timeout(self) -> JmxTimeout:
        return JmxTimeout(f"broker {self.broker.broker_id} JMX at {self._where()}: no answer in {self.timeout_s:g} s")

    def close(self) -> None:
        """Nothing to release: every call is its own process."""


def _jar_error(exc: subprocess.CalledProcessError) -> str:
    """The jar prints `{"error": ..., "message": ...}` and exits 2 on connect or query failure."""
    text = (exc.output or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
    try:
        parsed = json.loads(text)
        return f"{parsed.get('error')}: {parsed.get('message')}"
    except (json.JSONDecodeError, AttributeError):
        return text.strip()[-300:] or f"jmxquery exited with status {exc.returncode}"
