"""Transport choices that need no broker: what is refused, and why; jmxquery's runner against fake `java` scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr

from collectors.catalogue import BeanQuery, Reading
from collectors.transport import JmxqueryTransport, JmxTimeout, JmxUnreachable, JpypeTransport, open_transport
from pulse.config import JmxBrokerConfig, JmxConfig
from pulse.errors import ConfigError
from pulse.polling import poll


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


def fake_java(tmp_path: Path, body: str) -> str:
    """A `java` that ignores the jar's arguments and runs `body` (sh): the jar's outputs without a JVM or broker."""
    script = tmp_path / "java"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_jmxquery_reads_the_jar_json_numbers_keys_and_number_types_printed_as_text(tmp_path: Path) -> None:
    printed = [
        {"mBeanName": "kafka.server:type=KafkaServer,name=BrokerState", "attribute": "Value",
         "attributeType": "Byte", "value": "3"},
        {"mBeanName": "java.lang:type=Memory", "attribute": "HeapMemoryUsage", "attributeKey": "used",
         "attributeType": "Long", "value": 123},
        {"mBeanName": "java.lang:type=Runtime", "attribute": "VmName", "attributeType": "String", "value": "x"},
    ]  # fmt: skip
    java = fake_java(tmp_path, f"echo '{json.dumps(printed)}'")
    transport = JmxqueryTransport(JmxBrokerConfig(broker_id=1, port=9999), 10, java_path=java)
    readings = transport.read([BeanQuery("java.lang:type=Memory", ("HeapMemoryUsage",))])
    assert readings == [
        Reading("kafka.server:type=KafkaServer,name=BrokerState", "Value", 3.0),
        Reading("java.lang:type=Memory", "HeapMemoryUsage", 123.0, "used"),
        Reading("java.lang:type=Runtime", "VmName", "x"),
    ]


def test_jmxquery_names_the_jar_error(tmp_path: Path) -> None:
    java = fake_java(tmp_path, """echo '{"error": "connection-error", "message": "refused"}'; exit 2""")
    transport = JmxqueryTransport(JmxBrokerConfig(broker_id=4, port=9999), 10, java_path=java)
    with pytest.raises(JmxUnreachable, match=r"broker 4 JMX at .*: connection-error: refused") as caught:
        transport.read([BeanQuery("java.lang:type=Memory", ("HeapMemoryUsage",))])
    assert not isinstance(caught.value, JmxTimeout)


def test_jmxquery_kills_the_jvm_at_the_deadline_and_reaps_it(tmp_path: Path) -> None:
    """A hung JVM is killed when the scrape's time is up, not left to run (it would sleep 600 s here)."""
    pid_file = tmp_path / "pid"
    java = fake_java(tmp_path, f"echo $$ > {pid_file}; exec sleep 600")
    transport = JmxqueryTransport(JmxBrokerConfig(broker_id=2, port=9999), 0.5, java_path=java)
    with pytest.raises(JmxTimeout, match=r"broker 2 JMX at .*: no answer in 0\.5 s"):
        transport.read([BeanQuery("java.lang:type=Memory", ("HeapMemoryUsage",))])
    pid = int(pid_file.read_text())
    poll(lambda: Path(f"/proc/{pid}").exists(), lambda alive: not alive, 30, f"the killed JVM {pid} reaped")
