"""How a broker scrape reaches JMX: one `JmxTransport` per broker, two implementations behind it.

First stage of the collectors' flow (transport -> mapping -> collector). Both implementations honour the same
contract, so `collector.py` and the tests treat them alike:

- `read(queries)` returns every `Reading` the queries match, or raises within about `timeout_s`:
  `JmxTimeout` when the broker does not answer in time, `JmxUnreachable` when it refuses or fails.
- Credentials never appear on a command line.

`JmxqueryTransport` wraps the `jmxquery` package (a JVM forked per call) and disarms its defects:
the attribute key it ignores is picked in `mapping.py`; a value with an unescaped quote or backslash, which breaks
the whole batch's JSON, is isolated by splitting the batch; its crash on timeout becomes `JmxTimeout`. It refuses
brokers with JMX credentials or TLS, because the jar takes the password as a command-line argument.
`JpypeTransport` keeps one JMX connection per broker in an in-process JVM (JPype1): no fork per scrape, and
credentials and trust-store passwords stay inside the process. Every RMI call is a round trip the broker's JVM must
schedule, so a read makes few of them: one `queryNames` per domain (its patterns OR-ed into one query the broker
evaluates), none for exact names, and one `getAttributes` per bean with every attribute any query asks of it,
`READS_IN_FLIGHT` at a time.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import logging
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from collectors.catalogue import BeanQuery, Reading
from collectors.jmx_tls import Endpoint, NameMismatch, TlsVerifier
from pulse.config import JmxBrokerConfig, JmxConfig
from pulse.errors import ConfigError, PulseError

_LOG = logging.getLogger(__name__)
READS_IN_FLIGHT = 4
"""`getAttributes` calls a JPype read keeps in flight per broker: on a loaded broker each round trip waits for a core,
and overlapping them keeps a 10,000-partition broker's read well inside `jmx.timeout_s`."""
_JAR_NUMBER_TYPES = frozenset({"Byte", "Short", "Float", "BigInteger", "BigDecimal", "AtomicInteger", "AtomicLong"})
"""Java types the jmxquery jar prints as JSON strings although they hold numbers."""


class JmxUnreachable(PulseError):
    """A broker's JMX endpoint refused the connection or failed the query."""


class JmxTimeout(JmxUnreachable):
    """A broker's JMX endpoint did not answer within the scrape's time limit (a hung or paused broker)."""


class _BatchAborted(JmxUnreachable):
    """jmxquery's jar gave up on a batch half-way ("general-exception"), typically a bean that disappeared."""


class JmxTransport(Protocol):
    """Reads MBean attributes from one broker; see the module docstring for the contract."""

    def read(self, queries: Sequence[BeanQuery]) -> list[Reading]: ...

    def close(self) -> None: ...


def service_url(broker: JmxBrokerConfig) -> str:
    return f"service:jmx:rmi:///jndi/rmi://{broker.host}:{broker.port}/jmxrmi"


def _number_or_string(value: Any) -> float | str | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return value
    return None


# --- jmxquery ---------------------------------------------------------------------------------------------------


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
                _LOG.warning("broker %s: %s returns a value jmxquery cannot encode; skipped", self.broker.broker_id,
                             queries[0].pattern)  # fmt: skip
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
            value = _number_or_string(result.value)
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


# --- JPype --------------------------------------------------------------------------------------------------------

_JVM_LOCK = threading.Lock()


def ensure_jvm(response_timeout_s: float) -> None:
    """Start the in-process JVM once per process. RMI's response timeout is fixed then, for every broker: it is
    what eventually frees a thread stuck on a paused broker after `read` has already given up on it."""
    import jpype

    with _JVM_LOCK:
        if not jpype.isJVMStarted():
            timeout_ms = str(int(response_timeout_s * 1000))
            try:
                _start_jvm(timeout_ms)
            except OSError as exc:  # the JVM of this process was shut down (interpreter exit): no restart
                raise JmxUnreachable(f"the in-process JVM is not available: {exc}") from exc


def _start_jvm(timeout_ms: str) -> None:
    import jpype
    import jpype.config

    # -Xrs and interrupt=False leave SIGINT/SIGTERM to Python, so `kafka-pulse collect` stops cleanly; and at
    # exit the JVM is not destroyed, which would wait for RMI's non-daemon threads and never return.
    jpype.config.destroy_jvm = False
    jpype.startJVM(
        "-Xrs",
        "-Xmx64m",
        "-XX:TieredStopAtLevel=1",
        f"-Dsun.rmi.transport.tcp.responseTimeout={timeout_ms}",
        f"-Dsun.rmi.transport.connectionTimeout={timeout_ms}",
        "-Djava.rmi.server.disableHttp=true",
        convertStrings=True,
        interrupt=False,
    )
    atexit.register(_stop_reference_queue)  # runs before JPype's own exit hook (atexit is last-in, first-out)


def _stop_reference_queue() -> None:
    """Stop JPype's reference-queue thread at exit: `destroy_jvm = False` leaves it running, and its entry into
    Python after a Java GC aborts a finalizing interpreter ("PyGILState_Release: thread state ... must be current")."""
    import jpype

    if not jpype.isJVMStarted():
        return
    try:
        jpype.JClass("org.jpype.ref.JPypeReferenceQueue").getInstance().stop()
    except Exception:  # exiting anyway: leaving the thread running is the old behaviour, not a new failure
        _LOG.debug("could not stop JPype's reference queue at exit", exc_info=True)


class JpypeTransport:
    """One JMX connection per broker, kept open across scrapes, in an in-process JVM."""

    def __init__(
        self,
        broker: JmxBrokerConfig,
        timeout_s: float,
        truststore: str | None = None,
        truststore_password: str | None = None,
    ) -> None:
        self.broker = broker
        self.timeout_s = timeout_s
        self._truststore = truststore
        self._truststore_password = truststore_password
        self._tls = TlsVerifier(truststore, truststore_password, timeout_s)
        self._connector: Any = None
        self._connection: Any = None
        # One worker per broker: a read stuck on a paused broker blocks only this broker's next scrape.
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"jmx-{broker.broker_id}")
        self._getters = concurrent.futures.ThreadPoolExecutor(
            READS_IN_FLIGHT, thread_name_prefix=f"jmx-{broker.broker_id}-get"
        )
        self._pending: concurrent.futures.Future[list[Reading]] | None = None
        self._closed = False
        self.vanished: list[str] = []
        """Beans matched by the last scrape's queries but removed before their attributes were read."""

    def read(self, queries: Sequence[BeanQuery]) -> list[Reading]:
        if self._pending is not None and not self._pending.done():
            raise JmxTimeout(f"broker {self.broker.broker_id} JMX at {self._where()}: the previous read still hangs")
        ensure_jvm(self.timeout_s)
        try:
            self._pending = self._worker.submit(self._read, list(queries))
        except RuntimeError as exc:  # the transport was closed, or the interpreter is exiting
            raise JmxUnreachable(f"broker {self.broker.broker_id}: the JMX transport is closed") from exc
        try:
            return self._pending.result(timeout=self.timeout_s)
        except concurrent.futures.TimeoutError:
            self._connection = None  # reconnect next time; the old connector is closed by the stuck thread's end
            raise JmxTimeout(
                f"broker {self.broker.broker_id} JMX at {self._where()}: no answer in {self.timeout_s:g} s"
            ) from None

    def _where(self) -> str:
        return f"{self.broker.host}:{self.broker.port}"

    def _connect(self) -> Any:
        import jpype

        HashMap = jpype.JClass("java.util.HashMap")
        JMXServiceURL = jpype.JClass("javax.management.remote.JMXServiceURL")
        JMXConnectorFactory = jpype.JClass("javax.management.remote.JMXConnectorFactory")
        env = HashMap()
        if self.broker.username is not None and self.broker.password is not None:
            credentials = jpype.JArray(jpype.JString)([self.broker.username, self.broker.password.get_secret_value()])
            env.put("jmx.remote.credentials", credentials)
        if self.broker.ssl:
            System = jpype.JClass("java.lang.System")
            if self._truststore is not None:
                System.setProperty("javax.net.ssl.trustStore", self._truststore)
            if self._truststore_password is not None:
                System.setProperty("javax.net.ssl.trustStorePassword", self._truststore_password)
            factory = jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")()
            # Java checks the chain only; the stub is used once its endpoints' certificates named their hosts.
            stub = self._tls.verified_stub(Endpoint(self.broker.host, self.broker.port), factory)
            self._connector = jpype.JClass("javax.management.remote.rmi.RMIConnector")(stub, env)
            self._connector.connect(env)
            return self._connector.getMBeanServerConnection()
        self._connector = JMXConnectorFactory.connect(JMXServiceURL(service_url(self.broker)), env)
        return self._connector.getMBeanServerConnection()

    def _read(self, queries: list[BeanQuery]) -> list[Reading]:
        import jpype

        try:
            if self._connection is None:
                self._close_connector()
                self._connection = self._connect()
            return self._query(self._connection, queries)
        except jpype.JException as exc:
            self._connection = None
            self._close_connector()
            raise JmxUnreachable(
                f"broker {self.broker.broker_id} JMX at {self._where()}: {self._describe(exc)}"
            ) from exc
        except NameMismatch as exc:
            self._connection = None
            raise JmxUnreachable(
                f"broker {self.broker.broker_id} JMX at {self._where()}: {exc}; refused (host name verification): "
                "set jmx.brokers[].host to a name the certificate holds, or reissue the certificate"
            ) from None

    def _describe(self, exc: Any) -> str:
        """Name the likely fix for a login or TLS failure; Java's own messages never carry the password."""
        import jpype

        SecurityException = jpype.JClass("java.lang.SecurityException")
        SSLException = jpype.JClass("javax.net.ssl.SSLException")
        cause = exc
        while cause is not None:
            if isinstance(cause, SecurityException):
                who = f"user {self.broker.username!r}" if self.broker.username else "no username (none configured)"
                return f"JMX login refused for {who} ({cause.getMessage()}); check jmx.brokers[].username/password"
            if isinstance(cause, SSLException):
                return f"TLS handshake failed ({cause.getMessage()}); check jmx.brokers[].ssl and jmx.truststore"
            cause = cause.getCause()
        return str(exc)

    def _query(self, connection: Any, queries: list[BeanQuery]) -> list[Reading]:
        beans = _beans_to_read(connection, queries)
        # Worker k reads beans k, k + n, k + 2n...: one task per worker, not one per bean, since with per-partition
        # beans (12,000 a broker at 1,000 partitions) a future per bean cost more than the reads gained.
        lanes = [beans[k::READS_IN_FLIGHT] for k in range(READS_IN_FLIGHT)]
        try:
            results = list(self._getters.map(lambda lane: [_read_bean(connection, bean) for bean in lane], lanes))
        except RuntimeError as exc:
            if not self._closed:
                raise
            # close() shut the readers down while this read was under way: the service is stopping.
            raise JmxUnreachable(f"broker {self.broker.broker_id}: the JMX transport is closed") from exc
        readings: list[Reading] = []
        self.vanished = []
        for index, bean in enumerate(beans):
            read = results[index % READS_IN_FLIGHT][index // READS_IN_FLIGHT]
            if read is None:
                # Kafka removes beans at run time (a deleted topic or partition, a closed connection, request
                # versions): one gone since queryNames is absent from this scrape, not a failed broker. An exact
                # name the broker never registered (a bean of another role or version) is simply absent.
                if not bean.exact:
                    self.vanished.append(str(bean.name))
                continue
            readings.extend(read)
        return readings

    def _close_connector(self) -> None:
        connector, self._connector = self._connector, None
        if connector is not None:
            try:
                connector.close()
            except Exception:  # closing a dead connection may fail; there is nothing left to release
                _LOG.debug("closing the JMX connector of broker %s failed", self.broker.broker_id, exc_info=True)

    def close(self) -> None:
        self._closed = True
        self._worker.submit(self._close_connector)
        self._worker.shutdown(wait=False)
        self._getters.shutdown(wait=False)


@dataclass(frozen=True)
class _Bean:
    """One `getAttributes` call of a read: a registered (or, when `exact`, a named) MBean and what to ask of it."""

    name: Any
    """The javax.management.ObjectName."""
    attributes: tuple[str, ...]
    """Every attribute any query matching the bean asks for, in the queries' order, each once."""
    exact: bool
    """Named by a query without wildcards, so not looked up first: absence is no race, nothing vanished."""


def _read_bean(connection: Any, bean: _Bean) -> list[Reading] | None:
    """One bean's readings (one `getAttributes` round trip), or None when the broker no longer has it; attributes a
    bean lacks are left out by getAttributes, not errors."""
    import jpype

    try:
        attributes = connection.getAttributes(bean.name, jpype.JArray(jpype.JString)(bean.attributes))
    except jpype.JClass("javax.management.InstanceNotFoundException"):
        return None
    CompositeData = jpype.JClass("javax.management.openmbean.CompositeData")
    name = str(bean.name)
    readings: list[Reading] = []
    for attribute in attributes:
        value = attribute.getValue()
        if isinstance(value, CompositeData):
            for key in value.getCompositeType().keySet():
                number = _number_or_string(_to_python(value.get(key)))
                if number is not None:
                    readings.append(Reading(name, str(attribute.getName()), number, str(key)))
            continue
        converted = _number_or_string(_to_python(value))
        if converted is not None:
            readings.append(Reading(name, str(attribute.getName()), converted))
    return readings


def _beans_to_read(connection: Any, queries: Sequence[BeanQuery]) -> list[_Bean]:
    """The beans `queries` match, each once, in the queries' order (names sorted within a query), in one
    `queryNames` round trip per domain: a domain's patterns OR-ed into one query the broker evaluates, exact names
    not looked up at all. The broker tries each bean of the domain against at most every pattern either way; the
    round trips are what a busy broker makes slow."""
    import jpype

    ObjectName = jpype.JClass("javax.management.ObjectName")
    Query = jpype.JClass("javax.management.Query")
    compiled = [(ObjectName(query.pattern), query) for query in queries]
    matched: dict[int, list[Any]] = {}
    by_domain: dict[str, list[int]] = {}
    for index, (name, _query) in enumerate(compiled):
        if name.isDomainPattern():  # wildcards in the domain: no scan to share, a query of its own
            matched[index] = list(connection.queryNames(name, None))
        elif name.isPattern():
            by_domain.setdefault(str(name.getDomain()), []).append(index)
    for domain, indices in by_domain.items():
        patterns = [compiled[i][0] for i in indices]
        if len(patterns) == 1:
            matched[indices[0]] = list(connection.queryNames(patterns[0], None))
            continue
        either = patterns[0]
        for pattern in patterns[1:]:
            either = Query.or_(either, pattern)
        found = list(connection.queryNames(ObjectName(f"{domain}:*"), either))
        for index, pattern in zip(indices, patterns, strict=True):
            matched[index] = [name for name in found if pattern.apply(name)]
    beans: dict[str, tuple[Any, list[str]]] = {}
    listed: set[str] = set()
    """Beans some pattern matched, so registered when listed."""
    for index, (name, query) in enumerate(compiled):
        names = sorted(matched[index], key=str) if index in matched else [name]
        for found in names:
            key = str(found)
            _, attributes = beans.setdefault(key, (found, []))
            attributes.extend(a for a in query.attributes if a not in attributes)
            if index in matched:
                listed.add(key)
    return [_Bean(name, tuple(attributes), key not in listed) for key, (name, attributes) in beans.items()]


def _to_python(value: Any) -> Any:
    """java.lang boxed numbers, booleans and strings as Python values; anything else as is."""
    import jpype

    if value is None:
        return None
    if isinstance(value, jpype.JClass("java.lang.Boolean")):
        return bool(value.booleanValue())
    if isinstance(value, jpype.JClass("java.lang.Number")):
        return float(value.doubleValue())
    if isinstance(value, str | jpype.JString):
        return str(value)
    return value


def open_transport(kind: str, broker: JmxBrokerConfig, jmx: JmxConfig) -> JmxTransport:
    """The transport `collectors.transport` names, for one broker of a cluster's `jmx` section."""
    if kind == "jmxquery":
        return JmxqueryTransport(broker, jmx.timeout_s)
    if kind == "jpype":
        truststore = str(jmx.truststore) if jmx.truststore is not None else None
        password = jmx.truststore_password.get_secret_value() if jmx.truststore_password is not None else None
        return JpypeTransport(broker, jmx.timeout_s, truststore, password)
    raise ConfigError(f"collectors.transport: unknown transport {kind!r}; use jmxquery or jpype")
