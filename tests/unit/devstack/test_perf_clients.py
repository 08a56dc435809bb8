"""The perf-tool launcher's pure parts: option spellings per Kafka version, JMX flags, and the properties file
that keeps client settings (passwords included) off the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.perf_clients import client_jvm_flags, consumer_args, producer_args, render_properties

CONFIG = Path("/w/c.properties")


@pytest.mark.parametrize(
    ("version", "config_flag"),
    [("3.9.2", "--producer.config"), ("4.1.0", "--producer.config"), ("4.3.1", "--command-config")],
)
def test_producer_options_follow_the_version(version: str, config_flag: str) -> None:
    assert producer_args(version, "t", 60_000, 200, 100, CONFIG) == [
        *("--topic", "t"),
        *("--num-records", "60000"),
        *("--record-size", "100"),
        *("--throughput", "200"),
        *(config_flag, str(CONFIG)),
    ]


@pytest.mark.parametrize(
    ("version", "count_flag", "config_flag"),
    [("3.9.2", "--messages", "--consumer.config"), ("4.3.1", "--num-records", "--command-config")],
)
def test_consumer_options_follow_the_version(version: str, count_flag: str, config_flag: str) -> None:
    args = consumer_args(version, "127.0.0.1:9092", "t", "g", 10, 600_000, CONFIG)
    assert args == [
        *("--bootstrap-server", "127.0.0.1:9092"),
        *("--topic", "t"),
        *("--group", "g"),
        *(count_flag, "10"),
        *("--timeout", "600000"),
        *(config_flag, str(CONFIG)),
    ]


def test_jmx_flags_bind_loopback_with_one_port() -> None:
    flags = client_jvm_flags(41234)
    assert "-Dcom.sun.management.jmxremote.port=41234" in flags
    assert "-Dcom.sun.management.jmxremote.rmi.port=41234" in flags
    assert "-Dcom.sun.management.jmxremote.host=127.0.0.1" in flags
    assert "-Djava.rmi.server.hostname=127.0.0.1" in flags
    assert "-XX:TieredStopAtLevel=1" in flags


def test_properties_escape_separators_so_values_arrive_as_written() -> None:
    text = render_properties({"sasl.jaas.config": 'x required username="u" password="p=q:r";', "a": " lead\\"})
    assert text == 'sasl.jaas.config=x required username\\="u" password\\="p\\=q\\:r";\na=\\ lead\\\\\n'
