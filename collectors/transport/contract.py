"""What every JMX transport promises (`JmxTransport`) and the errors it raises; the implementations sit beside this
module, one per file, and `collectors.transport.open_transport` picks one.

- `read(queries)` returns every `Reading` the queries match, or raises within about `timeout_s`:
  `JmxTimeout` when the broker does not answer in time, `JmxUnreachable` when it refuses or fails.
- Credentials never appear on a command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from collectors.catalogue import BeanQuery, Reading
from pulse.config import JmxBrokerConfig
from pulse.errors import PulseError


class JmxUnreachable(PulseError):
    """A broker's JMX endpoint refused the connection or failed the query."""


class JmxTimeout(JmxUnreachable):
    """A broker's JMX endpoint did not answer within the scrape's time limit (a hung or paused broker)."""


class JmxTransport(Protocol):
    """Reads MBean attributes from one broker; see the module docstring for the contract."""

    def read(self, queries: Sequence[BeanQuery]) -> list[Reading]: ...

    def close(self) -> None: ...


def service_url(broker: JmxBrokerConfig) -> str:
    return f"service:jmx:rmi:///jndi/rmi://{broker.host}:{broker.port}/jmxrmi"


def number_or_string(value: Any) -> float | str | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return value
    return None
