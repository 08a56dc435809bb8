"""JMX with a login over TLS on a real broker: the jpype transport scrapes it with the configured credentials and
trust store, and no password reaches any command line; a JMX endpoint whose trusted certificate names another host
is refused (collectors/jmx_tls.py) and counted as a failed scrape."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from collectors.catalogue import TopicSelection, scrape_plan
from collectors.collector import JmxCollector
from collectors.jmx_tls import Endpoint, TlsVerifier, stub_endpoints
from collectors.mapping import BrokerIdentity, Family, map_readings
from collectors.scrapers import BrokerScraper
from collectors.transport import JmxUnreachable, ensure_jvm, open_transport
from collectors.transport.trust import ROUTER, JmxPeer
from devstack.cluster import DevCluster
from devstack.tls import create_tls_files, write_truststore
from devstack.topology import (
    JmxAuthFiles,
    JmxSecurity,
    Security,
    render_jmx_management_properties,
    render_jmx_ssl_properties,
)
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import ClusterConfig, JmxBrokerConfig, JmxConfig
from pulse.errors import ConfigError
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.ports import free_ports, is_listening
from tests.fixtures.kafka import KAFKA_VERSION
from tests.fixtures.logs import register_log

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A 1-node Kafka 4.x cluster whose JMX needs a login and speaks TLS (connector and RMI registry)."""
    cluster = DevCluster.plan(
        tmp_path_factory.mktemp("kafka-jmx-tls"), 1, KAFKA_VERSION, Security.PLAINTEXT, JmxSecurity.AUTH_TLS
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


@dataclass(frozen=True)
class Elsewhere:
    """A JVM's JMX agent over TLS on 127.0.0.1 whose certificate, from a CA we trust, names only another host."""

    port: int
    truststore: Path
    truststore_password: str


def _write_private(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)  # the JMX agent refuses a password file others may read


def _await_listening(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    def listening() -> bool:
        assert proc.poll() is None, f"the JMX agent's JVM exited with {proc.returncode}"
        return is_listening(port, timeout_s=1)

    poll(listening, bool, timeout_s, f"a JMX agent listening on 127.0.0.1:{port}", interval_s=0.1)


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Elsewhere]:
    """The JDK's own JMX agent (what Kafka runs too) in a JVM that only sleeps; started in about a second."""
    home = tmp_path_factory.mktemp("jmx-elsewhere")
    tls = create_tls_files(home / "tls", names=("kafka-elsewhere.example",))
    truststore = home / "truststore.p12"
    trust_password = write_truststore(tls.ca_file, truststore)
    _write_private(home / "jmxremote.password", "pulse-monitor s3cret-elsewhere\n")
    _write_private(home / "jmxremote.access", "pulse-monitor readonly\n")
    _write_private(home / "jmx-ssl.properties", render_jmx_ssl_properties(tls))
    files = JmxAuthFiles(home / "jmxremote.password", home / "jmxremote.access", home / "jmx-ssl.properties")
    (port,) = free_ports(1)
    _write_private(home / "management.properties", render_jmx_management_properties(port, files))
    (home / "Sleep.java").write_text(
        "public class Sleep { public static void main(String[] a) throws Exception { Thread.sleep(600_000L); } }\n"
    )
    log = (home / "jvm.log").open("wb")
    proc = subprocess.Popen(
        ["java", "-Xmx32m", f"-Dcom.sun.management.config.file={home / 'management.properties'}", "Sleep.java"],
        cwd=home,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    register_log("jmx-elsewhere JVM", home / "jvm.log")
    try:
        _await_listening(port, proc, 60)
        yield Elsewhere(port, truststore, trust_password)
    finally:
        proc.kill()
        proc.wait(30)
        log.close()


def test_a_trusted_certificate_naming_another_host_is_refused_with_its_names(elsewhere: Elsewhere) -> None:
    broker = JmxBrokerConfig(
        broker_id=7, host="127.0.0.1", port=elsewhere.port, username="pulse-monitor",
        password=SecretStr("s3cret-elsewhere"), ssl=True,
    )  # fmt: skip
    jmx = JmxConfig(
        brokers=[broker], truststore=elsewhere.truststore,
        truststore_password=SecretStr(elsewhere.truststore_password), timeout_s=60.0,
    )  # fmt: skip
    transport = open_transport("jpype", broker, jmx)
    scraper = BrokerScraper(lambda: BrokerIdentity("dev", 7, None), transport, scrape_plan(), TopicSelection(), 60)
    try:
        result = scraper.scrape_once()
    finally:
        scraper.stop()
    assert not result.ok and result.reason == "unreachable"
    assert result.error is not None
    assert result.error.startswith(
        f"broker 7 JMX at 127.0.0.1:{elsewhere.port}: TLS certificate of 127.0.0.1:{elsewhere.port} does not name "
        "'127.0.0.1' (it holds DNS:kafka-elsewhere.example, CN=kafka-elsewhere.example"
    ), result.error
    assert "host name verification" in result.error
    for secret in ("s3cret-elsewhere", elsewhere.truststore_password):
        assert secret not in result.error

    registry = CollectorRegistry()
    registry.register(JmxCollector({7: scraper}))
    labels = {"cluster": "dev", "broker": "7", "rack": ""}
    assert registry.get_sample_value("kafka_pulse_jmx_up", labels) == 0.0
    failures = registry.get_sample_value("kafka_pulse_jmx_scrape_failures_total", {**labels, "reason": "unreachable"})
    assert failures == 1.0


def test_the_broker_is_also_verified_by_its_dns_name(secured: DevCluster) -> None:
    jmx = jmx_of(dev_cluster_config(secured))
    broker = jmx.brokers[0].model_copy(update={"host": "localhost"})  # the certificate holds localhost too
    transport = open_transport("jpype", broker, jmx)
    try:
        families = map_readings(transport.read(scrape_plan()), BrokerIdentity("dev", 1, None))
    finally:
        transport.close()
    assert [s.value for s in families["kafka_server_kafkaserver_brokerstate"].samples] == [3.0]


def test_the_rmi_server_endpoint_the_stub_names_is_verified_too(secured: DevCluster) -> None:
    jmx = jmx_of(dev_cluster_config(secured))
    assert jmx.truststore is not None and jmx.truststore_password is not None
    verifier = TlsVerifier(str(jmx.truststore), jmx.truststore_password.get_secret_value(), 60.0)
    ensure_jvm(60.0)
    import jpype

    factory = jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")()
    port = secured.node(1).jmx_port
    trust = ROUTER.trust(str(jmx.truststore), jmx.truststore_password.get_secret_value())
    with ROUTER.peer(JmxPeer(trust, {"127.0.0.1"})):  # as the transport marks its threads (transport/trust.py)
        stub = verifier.verified_stub(Endpoint("127.0.0.1", port), factory)
    # The dev broker serves registry and connector on one port (com.sun.management.jmxremote.rmi.port).
    assert stub_endpoints(str(stub)) == [Endpoint("127.0.0.1", port)]
    assert "SslRMIClientSocketFactory" in str(stub)
