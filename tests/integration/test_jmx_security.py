"""JMX with a login over TLS on a real broker: the jpype transport scrapes it with the configured credentials and
trust store, and no password reaches any command line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from collectors.catalogue import scrape_plan
from collectors.mapping import BrokerIdentity, Family, map_readings
from collectors.transport import JmxUnreachable, open_transport
from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION
from devstack.topology import JmxSecurity, Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import ClusterConfig, JmxConfig
from pulse.errors import ConfigError
from pulse.paths import cache_dir
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A 1-node Kafka 4.x cluster whose JMX needs a login and speaks TLS (connector and RMI registry)."""
    cluster = DevCluster.plan(
        tmp_path_factory.mktemp("kafka-jmx-tls"), 1, DEFAULT_VERSION, Security.PLAINTEXT, JmxSecurity.AUTH_TLS
    )
    register_log("kafka-jmx-tls node 1", cluster.log_path(1))
    try:
        cluster.up(cache_dir(), timeout_s=90)
        yield cluster
    finally:
        cluster.down(keep_data=True)


def jmx_of(cluster: ClusterConfig) -> JmxConfig:
    """The cluster's JMX section with a generous limit: a first TLS connect on a busy 2-core box takes seconds."""
    assert cluster.jmx is not None
    return cluster.jmx.model_copy(update={"timeout_s": 60.0})


def secrets_of(cluster: DevCluster) -> list[str]:
    """Every password the secured cluster involves: the JMX login, the keystore's and the trust store's."""
    creds = cluster.jmx_credentials()
    assert creds is not None and creds.ssl and creds.truststore_password is not None
    ssl_props = (cluster.home / "jmx" / "jmx-ssl.properties").read_text()
    keystore_password = ssl_props.split("javax.net.ssl.keyStorePassword=", 1)[1].strip()
    return [creds.password, keystore_password, creds.truststore_password]


def scrape_with_login(cluster: DevCluster) -> dict[str, Family]:
    jmx = jmx_of(dev_cluster_config(cluster))
    assert jmx.brokers[0].ssl and jmx.brokers[0].username == "pulse-monitor" and jmx.truststore is not None
    transport = open_transport("jpype", jmx.brokers[0], jmx)
    try:
        return map_readings(transport.read(scrape_plan()), BrokerIdentity("dev", 1, None))
    finally:
        transport.close()


def test_jpype_scrapes_a_broker_with_login_and_tls(secured: DevCluster) -> None:
    families = scrape_with_login(secured)
    assert [s.value for s in families["kafka_server_kafkaserver_brokerstate"].samples] == [3.0]  # RUNNING
    assert sum(s.value for s in families["kafka_controller_kafkacontroller_activecontrollercount"].samples) == 1


def test_a_wrong_password_names_the_broker_and_user_but_no_password(secured: DevCluster) -> None:
    jmx = jmx_of(dev_cluster_config(secured))
    wrong = "not-the-" + "password-42"
    broker = jmx.brokers[0].model_copy(update={"password": SecretStr(wrong)})
    transport = open_transport("jpype", broker, jmx)
    try:
        with pytest.raises(JmxUnreachable) as caught:
            transport.read(scrape_plan())
    finally:
        transport.close()
    message = str(caught.value)
    assert message.startswith(f"broker 1 JMX at 127.0.0.1:{secured.node(1).jmx_port}: JMX login refused")
    assert "'pulse-monitor'" in message
    for secret in [wrong, *secrets_of(secured)]:
        assert secret not in message


def test_no_password_on_the_command_line_of_the_broker_or_of_this_process(secured: DevCluster) -> None:
    scrape_with_login(secured)  # so this process holds the JMX login in its JVM now
    pids = {"broker": secured.pids[1], "this process": os.getpid()}
    for what, pid in pids.items():
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        for secret in secrets_of(secured):
            assert secret not in cmdline, f"a password is on the command line of {what}"
    broker_cmdline = Path(f"/proc/{secured.pids[1]}/cmdline").read_bytes().split(b"\0")
    assert not [arg for arg in broker_cmdline if arg.startswith(b"-Dcom.sun.management.jmxremote")]
    for name in ("jmxremote.password", "jmxremote.access", "jmx-ssl.properties"):
        assert (secured.home / "jmx" / name).stat().st_mode & 0o077 == 0, name
    assert (secured.node_dir(1) / "management.properties").stat().st_mode & 0o077 == 0


def test_jmxquery_refuses_the_secured_broker_rather_than_put_the_password_on_argv(secured: DevCluster) -> None:
    jmx = jmx_of(dev_cluster_config(secured))
    with pytest.raises(ConfigError, match=r"broker 1.*credentials on the command line.*set collectors\.transport"):
        open_transport("jmxquery", jmx.brokers[0], jmx)
