"""Client targets through the brokers' machinery, without servers: errors name the client, and a client whose JMX
stops answering is reported down with its last success kept and its values withheld."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from collectors.catalogue import CLIENT_BEANS, NO_TOPICS, BeanQuery, Reading
from collectors.clients import ClientTransport, open_client_transport
from collectors.collector import CLIENT_HEALTH, JmxCollector
from collectors.mapping import ClientIdentity
from collectors.scrapers import BrokerScraper
from collectors.transport import JmxTimeout, JmxUnreachable
from pulse.config import JmxClientConfig
from pulse.errors import ConfigError

CLIENT = JmxClientConfig(name="orders-producer", host="127.0.0.1", port=9999, cluster="prod")
BEAN = "kafka.producer:type=producer-metrics,client-id=orders-1"


class Scripted:
    """A JmxTransport that returns or raises what it is told, one outcome per read."""

    def __init__(self, *outcomes: list[Reading] | Exception) -> None:
        self.outcomes = list(outcomes)
        self.closed = False

    def read(self, queries: Sequence[BeanQuery]) -> list[Reading]:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def close(self) -> None:
        self.closed = True


AT = "client target orders-producer JMX at 127.0.0.1:9999: "


@pytest.mark.parametrize(
    ("raised", "want"),
    [
        pytest.param(
            JmxTimeout("broker 0 JMX at 127.0.0.1:9999: no answer in 5 s"),
            AT + "no answer in 5 s",
            id="timeout-stays-timeout",
        ),
        pytest.param(
            JmxUnreachable("broker 0 JMX at 127.0.0.1:9999: java.rmi.ConnectException: refused"),
            AT + "java.rmi.ConnectException: refused",
            id="refused",
        ),
        pytest.param(
            JmxUnreachable("broker 0: the JMX transport is closed"), AT + "the JMX transport is closed", id="closed"
        ),
        pytest.param(
            JmxUnreachable(
                "broker 0 JMX at 127.0.0.1:9999: TLS handshake failed (PKIX path building "
                "failed); check jmx.brokers[].ssl and jmx.truststore"
            ),
            AT + "TLS handshake failed (PKIX path building failed); check collectors.clients[].ssl and "
            "collectors.clients[].truststore",
            id="hint-names-the-client-keys",
        ),
        pytest.param(
            JmxUnreachable("the in-process JVM is not available: shut down"),
            AT + "the in-process JVM is not available: shut down",
            id="other-message-kept-whole",
        ),
    ],
)
def test_errors_name_the_client_target_not_a_broker(raised: Exception, want: str) -> None:
    transport = ClientTransport(CLIENT, Scripted(raised))
    with pytest.raises(JmxUnreachable) as excinfo:
        transport.read(CLIENT_BEANS)
    assert type(excinfo.value) is type(raised)  # a timeout stays a timeout: the scraper counts reason="timeout"
    assert str(excinfo.value) == want


def test_jmxquery_refuses_credentials_naming_the_client_entry() -> None:
    client = JmxClientConfig(name="mm2-dr", port=9998, username="monitor", password=SecretStr("s3cret"))
    with pytest.raises(ConfigError) as excinfo:
        open_client_transport(client, "jmxquery", index=1)
    message = str(excinfo.value)
    assert message.startswith("collectors.clients[1] (mm2-dr): the jmxquery transport would pass the JMX credentials")
    assert "broker" not in message and "s3cret" not in message


def _exposed(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_client_that_stops_answering_is_down_keeps_its_last_success_and_loses_its_values() -> None:
    readings = [Reading(BEAN, "record-error-rate", 0.0), Reading(BEAN, "request-latency-avg", 3.5)]
    inner = Scripted(readings, JmxUnreachable("broker 0 JMX at 127.0.0.1:9999: Connection refused"))
    identity = ClientIdentity(CLIENT.name, CLIENT.cluster)
    scraper = BrokerScraper(lambda: identity, ClientTransport(CLIENT, inner), CLIENT_BEANS, NO_TOPICS, 60)
    registry = CollectorRegistry()
    registry.register(JmxCollector({CLIENT.name: scraper}, CLIENT_HEALTH))
    target = {("client_target", "orders-producer"), ("cluster", "prod")}
    series = target | {("clientid", "orders-1")}

    assert _exposed(registry) == {}  # not scraped yet: unknown, not down
    assert scraper.name == "client target orders-producer JMX"
    first = scraper.scrape_once()
    up = _exposed(registry)
    assert up[("kafka_pulse_client_jmx_up", frozenset(target))] == 1
    assert up[("kafka_producer_request_latency_avg", frozenset(series))] == 3.5
    assert up[("kafka_producer_record_error_rate", frozenset(series))] == 0

    second = scraper.scrape_once()
    assert (second.ok, second.reason, second.last_success_s) == (False, "unreachable", first.last_success_s)
    assert second.error == "client target orders-producer JMX at 127.0.0.1:9999: Connection refused"
    down = _exposed(registry)
    assert down[("kafka_pulse_client_jmx_up", frozenset(target))] == 0
    assert down[("kafka_pulse_client_jmx_last_success_timestamp_seconds", frozenset(target))] == first.last_success_s
    failures = ("kafka_pulse_client_jmx_scrape_failures_total", frozenset(target | {("reason", "unreachable")}))
    assert down[failures] == 1
    assert not [name for name, _ in down if name.startswith("kafka_producer_")]
    assert not [name for name, _ in down if name.startswith("kafka_pulse_jmx_")]  # broker health names stay brokers'
    scraper.stop()
    assert inner.closed


BROKER_BEAN = "kafka.producer:type=producer-metrics,client-id=orders-1"


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param([Reading("kafka.producer:type", "record-error-rate", 1.0)], id="bean-without-equals-ValueError"),
        pytest.param([Reading('kafka.producer:type="open', "record-error-rate", 1.0)], id="unclosed-quote-IndexError"),
        pytest.param([Reading('kafka.producer:type="a\\', "record-error-rate", 1.0)], id="trailing-escape-IndexError"),
        pytest.param(RuntimeError("the in-process JVM is not available: shut down"), id="transport-RuntimeError"),
        pytest.param(KeyError("attribute"), id="transport-KeyError"),
        pytest.param(JmxUnreachable("broker 0 JMX at 127.0.0.1:9999: Connection refused"), id="pulse-error-still"),
    ],
)
def test_any_exception_in_a_scrape_is_a_failed_read_never_a_frozen_one(failure: list[Reading] | Exception) -> None:
    """A read that raises anything (a malformed MBean name the parser trips on, a bug in a transport) is a failed
    read: up 0, counted by reason, last success time kept, values withheld; before, only a PulseError was, and
    anything else left the previous good result exported as current."""
    good = [Reading(BROKER_BEAN, "record-error-rate", 0.0), Reading(BROKER_BEAN, "request-latency-avg", 3.5)]
    identity = ClientIdentity(CLIENT.name, CLIENT.cluster)
    scraper = BrokerScraper(lambda: identity, ClientTransport(CLIENT, Scripted(good, failure)), CLIENT_BEANS,
                            NO_TOPICS, 60)  # fmt: skip
    registry = CollectorRegistry()
    registry.register(JmxCollector({CLIENT.name: scraper}, CLIENT_HEALTH))
    target = {("client_target", "orders-producer"), ("cluster", "prod")}
    first = scraper.scrape_once()
    assert _exposed(registry)[("kafka_pulse_client_jmx_up", frozenset(target))] == 1

    second = scraper.scrape_once()
    reason = "unreachable" if isinstance(failure, JmxUnreachable) else "error"
    assert (second.ok, second.value, second.reason, second.last_success_s) == (False, None, reason, first.finished_s)
    assert second.error
    down = _exposed(registry)
    assert down[("kafka_pulse_client_jmx_up", frozenset(target))] == 0
    assert down[("kafka_pulse_client_jmx_last_success_timestamp_seconds", frozenset(target))] == first.finished_s
    assert down[("kafka_pulse_client_jmx_scrape_failures_total", frozenset(target | {("reason", reason)}))] == 1
    assert not [name for name, _ in down if name.startswith("kafka_producer_")]
