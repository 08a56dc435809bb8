"""Transport choices that need no broker: what is refused, and why."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from collectors.transport import JmxqueryTransport, JpypeTransport, open_transport
from pulse.config import JmxBrokerConfig, JmxConfig
from pulse.errors import ConfigError


def test_jmxquery_refuses_credentials_because_they_would_be_on_a_command_line() -> None:
    broker = JmxBrokerConfig(broker_id=1, port=9999, username="ops", password=SecretStr("s3cret"))
    with pytest.raises(ConfigError, match=r"command line.*set collectors\.transport to jpype") as caught:
        JmxqueryTransport(broker, 5)
    assert "s3cret" not in str(caught.value)


def test_jmxquery_refuses_tls() -> None:
    with pytest.raises(ConfigError, match="TLS"):
        JmxqueryTransport(JmxBrokerConfig(broker_id=1, port=9999, ssl=True), 5)


def test_config_picks_the_transport() -> None:
    jmx = JmxConfig(brokers=[JmxBrokerConfig(broker_id=1, port=9999)], timeout_s=2)
    assert isinstance(open_transport("jmxquery", jmx.brokers[0], jmx), JmxqueryTransport)
    jpype_transport = open_transport("jpype", jmx.brokers[0], jmx)
    assert isinstance(jpype_transport, JpypeTransport)
    jpype_transport.close()
