"""How a broker scrape reaches JMX: one `JmxTransport` per broker, two implementations behind it.

First stage of the collectors' flow (transport -> mapping -> collector). Both implementations honour the contract
in `contract.py`, so `collector.py` and the tests treat them alike. One module per implementation, as uvicorn keeps
one per HTTP protocol: `jmxquery.py` (a JVM forked per call), `jpype.py` (one connection per broker in an
in-process JVM, started by `jvm.py`); `open_transport` below picks one by name.
"""

from __future__ import annotations

from collectors.transport.contract import JmxTimeout, JmxTransport, JmxUnreachable, service_url
from collectors.transport.jmxquery import JmxqueryTransport
from collectors.transport.jpype import READS_IN_FLIGHT, JpypeTransport
from collectors.transport.jvm import ensure_jvm
from pulse.config import JmxBrokerConfig, JmxConfig
from pulse.errors import ConfigError

__all__ = [
    "READS_IN_FLIGHT",
    "JmxTimeout",
    "JmxTransport",
    "JmxUnreachable",
    "JmxqueryTransport",
    "JpypeTransport",
    "ensure_jvm",
    "open_transport",
    "service_url",
]


def open_transport(kind: str, broker: JmxBrokerConfig, jmx: JmxConfig) -> JmxTransport:
    """The transport `collectors.transport` names, for one broker of a cluster's `jmx` section."""
    if kind == "jmxquery":
        return JmxqueryTransport(broker, jmx.timeout_s)
    if kind == "jpype":
        truststore = str(jmx.truststore) if jmx.truststore is not None else None
        password = jmx.truststore_password.get_secret_value() if jmx.truststore_password is not None else None
        return JpypeTransport(broker, jmx.timeout_s, truststore, password)
    raise ConfigError(f"collectors.transport: unknown transport {kind!r}; use jmxquery or jpype")
