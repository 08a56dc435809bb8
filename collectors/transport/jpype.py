"""`JpypeTransport`: one JMX connection per broker, kept open across scrapes, in an in-process JVM (JPype1).

No fork per scrape, and credentials and trust-store passwords stay inside the process. Every RMI call is a round
trip the broker's JVM must schedule, so a read makes few of them: one `queryNames` per domain (its patterns OR-ed
into one query the broker evaluates), none for exact names, and one `getAttributes` per bean with every attribute
any query asks of it, `READS_IN_FLIGHT` at a time. `import jpype` below is the third-party package: imports are
absolute, so this module's own name does not shadow it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collectors.catalogue import BeanQuery, Reading
from collectors.jmx_tls import Endpoint, NameMismatch, TlsVerifier, stub_endpoints
from collectors.transport.contract import JmxTimeout, JmxUnreachable, number_or_string, service_url
from collectors.transport.java_text import attribute_number, composite_numbers
from collectors.transport.jvm import ensure_jvm
from collectors.transport.trust import ROUTER, JmxPeer
from pulse.config import JmxBrokerConfig

_LOG = logging.getLogger(__name__)
READS_IN_FLIGHT = 4
"""`getAttributes` calls a JPype read keeps in flight per broker: on a loaded broker each round trip waits for a core,
and overlapping them keeps a 10,000-partition broker's read well inside `jmx.timeout_s`."""


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
        self._peer: JmxPeer | None = None
        """This broker's cluster trust and hosts, marking the threads that connect and read (`trust.py`)."""
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
            factory = jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")()
            # The stub is used once its endpoints' certificates named their hosts (a message naming the names);
            # every RMI connection is then checked again, by this cluster's trust store, in trust.py.
            stub = self._tls.verified_stub(Endpoint(self.broker.host, self.broker.port), factory)
            assert self._peer is not None
            self._peer.hosts.update(e.host for e in stub_endpoints(str(stub)))
            self._connector = jpype.JClass("javax.management.remote.rmi.RMIConnector")(stub, env)
            self._connector.connect(env)
            return self._connector.getMBeanServerConnection()
        self._connector = JMXConnectorFactory.connect(JMXServiceURL(service_url(self.broker)), env)
        return self._connector.getMBeanServerConnection()

    def _read(self, queries: list[BeanQuery]) -> list[Reading]:
        import jpype

        try:
            with self._marked():
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

    def _marked(self) -> contextlib.AbstractContextManager[object]:
        """Mark the calling thread's TLS handshakes as this broker's (its cluster's trust store, loaded once per
        process on first use); a broker without TLS opens none."""
        if not self.broker.ssl:
            return contextlib.nullcontext()
        if self._peer is None:
            self._peer = JmxPeer(ROUTER.trust(self._truststore, self._truststore_password), {self.broker.host})
        return ROUTER.peer(self._peer)

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
            results = list(self._getters.map(lambda lane: self._read_lane(connection, lane), lanes))
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

    def _read_lane(self, connection: Any, lane: list[_Bean]) -> list[list[Reading] | None]:
        """A getter's beans; its thread marked with this broker's peer, since RMI may open a connection on it."""
        with self._marked():
            return [_read_bean(connection, bean) for bean in lane]

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
        attribute_name = str(attribute.getName())
        number = attribute_number(attribute.toString(), attribute_name)
        if number is not None:  # read from Java's text: boxing it would leak (java_text.py)
            readings.append(Reading(name, attribute_name, number))
            continue
        value = attribute.getValue()  # a string, a boolean or composite data: none of them leaks
        if isinstance(value, CompositeData):
            readings.extend(_composite_readings(name, attribute_name, value))
            continue
        converted = number_or_string(_to_python(value))
        if converted is not None:
            readings.append(Reading(name, attribute_name, converted))
    return readings


def _composite_readings(bean: str, attribute: str, value: Any) -> list[Reading]:
    """A CompositeData's keys as readings: numbers from the text of its values (one call, nothing boxed), other
    values (strings, booleans) fetched one by one; nested data is not a reading."""
    keys = [str(key) for key in value.getCompositeType().keySet()]  # sorted, as `values()` is
    numbers = composite_numbers(value.values().toString(), len(keys)) or [None] * len(keys)
    readings: list[Reading] = []
    for key, number in zip(keys, numbers, strict=True):
        converted = number if number is not None else number_or_string(_to_python(value.get(key)))
        if converted is not None:
            readings.append(Reading(bean, attribute, converted, key))
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
