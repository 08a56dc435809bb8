"""Client targets: the JVM clients an operator lists under `collectors.clients`, scraped like brokers.

A client target reuses the brokers' machinery whole: the same transports (`transport.py`), the same scraper
(`scrapers.BrokerScraper`) and naming (`mapping.py` rules 7-8). What is its own lives here: the catalogue it
reads (`catalogue.CLIENT_BEANS`), its labels (`ClientIdentity`), and errors that name the client, not a broker.
"""

from __future__ import annotations

from collections.abc import Sequence

from collectors.catalogue import CLIENT_BEANS, BeanQuery, Reading, TopicSelection
from collectors.mapping import ClientIdentity
from collectors.scrapers import BrokerScraper
from collectors.transport import JmxTransport, JmxUnreachable, open_transport
from pulse.config import JmxBrokerConfig, JmxClientConfig, JmxConfig, JmxEndpoint
from pulse.errors import ConfigError

_ENDPOINT_ID = 0
"""The transports speak `JmxBrokerConfig`; a client target is the same endpoint with this unused broker id."""


def _endpoint(client: JmxClientConfig) -> tuple[JmxBrokerConfig, JmxConfig]:
    # The endpoint fields (host, port, login, ssl) are JmxEndpoint's, shared by both models.
    shared = client.model_dump(include=set(JmxEndpoint.model_fields))
    endpoint = JmxBrokerConfig(broker_id=_ENDPOINT_ID, **shared)
    # model_construct: the trust store was validated (and resolved against the config file) with the client.
    jmx = JmxConfig.model_construct(
        brokers=[],
        timeout_s=client.timeout_s,
        truststore=client.truststore,
        truststore_password=client.truststore_password,
    )
    return endpoint, jmx


_BROKER_KEYS = (("jmx.brokers[].", "collectors.clients[]."), ("jmx.truststore", "collectors.clients[].truststore"))
"""Config keys the transports' hints name for a broker, and the client target's keys for the same setting."""


def _reason(message: str) -> str:
    """The transport's message without the prefix naming the pseudo broker (`broker 0 JMX at host:port: `,
    `jmx.brokers (broker 0): `), and with its config hints pointing at the client's keys; else kept whole."""
    if message.startswith((f"broker {_ENDPOINT_ID} ", f"broker {_ENDPOINT_ID}:", "jmx.brokers (broker ")):
        message = message.split(": ", 1)[-1]
    for broker_key, client_key in _BROKER_KEYS:
        message = message.replace(broker_key, client_key)
    return message


class ClientTransport:
    """A client target's transport: reads through `inner`, and its errors name the target, not a broker."""

    def __init__(self, client: JmxClientConfig, inner: JmxTransport) -> None:
        self.client = client
        self._inner = inner

    def read(self, queries: Sequence[BeanQuery]) -> list[Reading]:
        try:
            return self._inner.read(queries)
        except JmxUnreachable as exc:  # JmxTimeout stays JmxTimeout: the scraper counts it as reason="timeout"
            where = f"{self.client.host}:{self.client.port}"
            raise type(exc)(f"client target {self.client.name} JMX at {where}: {_reason(str(exc))}") from exc

    def close(self) -> None:
        self._inner.close()


def open_client_transport(client: JmxClientConfig, kind: str, index: int | None = None) -> ClientTransport:
    """The `collectors.transport` named by `kind` for one client target; `index` places it in config errors."""
    endpoint, jmx = _endpoint(client)
    try:
        inner = open_transport(kind, endpoint, jmx)
    except ConfigError as exc:
        where = f"collectors.clients[{index}]" if index is not None else "collectors.clients"
        raise ConfigError(f"{where} ({client.name}): {_reason(str(exc))}") from exc
    return ClientTransport(client, inner)


def client_scraper(
    client: JmxClientConfig, kind: str, selection: TopicSelection, interval_s: float, index: int | None = None
) -> BrokerScraper:
    """A scraper for one client target: `CLIENT_BEANS` through the configured transport, labelled by target.
    MirrorMaker 2's per-partition series obey `selection`'s topic allow/deny regexes, as broker topics do."""
    identity = ClientIdentity(client.name, client.cluster)
    transport = open_client_transport(client, kind, index)
    return BrokerScraper(lambda: identity, transport, CLIENT_BEANS, selection, interval_s)
