"""JMX over TLS trusts per cluster in one process (collectors/transport/trust.py): two dev clusters with their own
CAs are both scraped by one `collect`; a cluster configured with the other's CA, or reached by a name its
certificate does not hold, is refused, by the trust manager RMI's own sockets go through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.transport import ensure_jvm
from collectors.transport.trust import ROUTER, JmxPeer
from devstack.cluster import DevCluster
from devstack.topology import JmxSecurity, Security
from kafka_pulse.clusters import dev_cluster_config
from pulse.config import ClusterConfig
from pulse.paths import cache_dir
from pulse.polling import poll
from tests.fixtures.kafka import KAFKA_VERSION
from tests.fixtures.logs import register_log
from tests.fixtures.pulse_process import PulseProcesses

pytestmark = pytest.mark.integration


def _tls_cluster(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[DevCluster]:
    """A 1-node cluster whose JMX needs a login and speaks TLS, with a CA of its own (made in its home)."""
    cluster = DevCluster.plan(tmp_path_factory.mktemp(name), 1, KAFKA_VERSION, Security.PLAINTEXT, JmxSecurity.AUTH_TLS)
    register_log(f"{name} node 1", cluster.log_path(1))
    try:
        cluster.up(cache_dir(), timeout_s=120)
        yield cluster
    finally:
        cluster.down(keep_data=True)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    yield from _tls_cluster(tmp_path_factory, "jmx-trust-a")


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    yield from _tls_cluster(tmp_path_factory, "jmx-trust-b")


def config_of(cluster: DevCluster, name: str, trust_of: DevCluster | None = None) -> dict[str, Any]:
    """`cluster` as a config entry named `name`, trusting the CA of `trust_of` (default: its own); the secrets
    written out, which a JSON dump masks."""
    config = dev_cluster_config(cluster, name)
    trusted = dev_cluster_config(trust_of or cluster).jmx
    assert config.jmx is not None and trusted is not None and trusted.truststore_password is not None
    entry = config.model_dump(mode="json")
    for dumped, broker in zip(entry["jmx"]["brokers"], config.jmx.brokers, strict=True):
        assert broker.password is not None
        dumped["password"] = broker.password.get_secret_value()
    entry["jmx"]["truststore"] = str(trusted.truststore)
    entry["jmx"]["truststore_password"] = trusted.truststore_password.get_secret_value()
    entry["jmx"]["timeout_s"] = 60.0  # a first TLS connect on a busy 2-core box takes seconds
    return entry


def jmx_up(url: str) -> dict[str, float]:
    """`kafka_pulse_jmx_up` by cluster, from collect's /metrics."""
    text = httpx.get(url + "/metrics", timeout=10).text
    return {
        sample.labels["cluster"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "kafka_pulse_jmx_up"
    }


def test_one_collect_trusts_each_cluster_by_its_own_ca(
    first: DevCluster, second: DevCluster, pulse_process: PulseProcesses, tmp_path: Path
) -> None:
    """Before, the first TLS connect fixed the JVM's trust store for every later one: whichever cluster came
    second was verified against the first's CA and stayed down."""
    first_ca = dev_cluster_config(first).jmx
    second_ca = dev_cluster_config(second).jmx
    assert first_ca is not None and second_ca is not None and first_ca.truststore != second_ca.truststore
    assert (first.home / "tls" / "ca.pem").read_bytes() != (second.home / "tls" / "ca.pem").read_bytes()
    config = {
        "clusters": [
            config_of(first, "a"),
            config_of(second, "b"),
            config_of(second, "b-with-a-ca", trust_of=first),
        ],
        "collectors": {"transport": "jpype", "scrape_interval_s": 1},
    }
    collect = pulse_process.start("collect", config, home=tmp_path)
    wanted = {"a": 1.0, "b": 1.0, "b-with-a-ca": 0.0}
    up = poll(lambda: jmx_up(collect.url), lambda seen: seen == wanted, 120, "jmx_up a=1, b=1, b-with-a-ca=0", 0.5)
    assert up == wanted
    refusals = [
        line for line in collect.log().splitlines() if "cluster b-with-a-ca broker 1 JMX: scrape failed" in line
    ]
    assert refusals, collect.log()[-3000:]
    assert "TLS handshake failed" in refusals[0] and "PKIX path" in refusals[0], refusals[0]


def handshake(cluster: DevCluster, host: str = "127.0.0.1") -> None:
    """A TLS handshake with `cluster`'s JMX port through RMI's own socket factory (what the RMI stubs use)."""
    import jpype

    factory = jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")()
    sock = factory.createSocket(host, cluster.node(1).jmx_port)
    try:
        sock.startHandshake()
    finally:
        sock.close()


def peer_of(cluster: ClusterConfig, *hosts: str) -> JmxPeer:
    assert cluster.jmx is not None and cluster.jmx.truststore is not None
    assert cluster.jmx.truststore_password is not None
    trust = ROUTER.trust(str(cluster.jmx.truststore), cluster.jmx.truststore_password.get_secret_value())
    return JmxPeer(trust, set(hosts))


def refusal(cluster: DevCluster, peer: JmxPeer | None) -> str:
    """The Java message refusing a handshake with `cluster` made for `peer` (None: an unmarked thread)."""
    import jpype

    SSLHandshakeException = jpype.JClass("javax.net.ssl.SSLHandshakeException")
    with pytest.raises(SSLHandshakeException) as caught:
        if peer is None:
            handshake(cluster)
        else:
            with ROUTER.peer(peer):
                handshake(cluster)
    return str(caught.value.getMessage())


def test_rmi_sockets_are_checked_by_the_marked_clusters_trust_and_host(first: DevCluster, second: DevCluster) -> None:
    ensure_jvm(60.0)
    first_config, second_config = dev_cluster_config(first), dev_cluster_config(second)
    # A certificate of the second cluster no marked handshake verified yet: an unmarked thread may not trust it.
    assert "no transport verified" in refusal(second, None)
    # The first cluster's CA does not vouch for the second cluster, though it is the CA of a configured cluster.
    assert "PKIX path" in refusal(second, peer_of(first_config, "127.0.0.1"))
    # Trusted chain, but the host connected to (a loopback name of its own) is not in the certificate.
    message = refusal(first, peer_of(first_config, "127.0.0.2"))
    assert "No subject alternative name matches 127.0.0.2" in message and "IP:127.0.0.1" in message, message
    with ROUTER.peer(peer_of(second_config, "127.0.0.1")):
        handshake(second)
    with ROUTER.peer(peer_of(first_config, "localhost")):
        handshake(first, "localhost")
    handshake(second)  # RMI's own threads (DGC) reach endpoints a marked handshake verified
