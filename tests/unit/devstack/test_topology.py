"""The dev cluster's config rendering: pure functions, no processes."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path

import pytest

from devstack.cluster import new_cluster_id
from devstack.runtime import CLIENT_VERSION, TOOLS, client_version, render_pom
from devstack.topology import (
    ClusterSpec,
    NodeSpec,
    Security,
    TlsFiles,
    jvm_flags,
    render_log_config,
    render_server_properties,
)


def spec(nodes: int, security: Security = Security.PLAINTEXT) -> ClusterSpec:
    racks = ("az-a", "az-b", "az-c")
    internal = security is Security.SASL_SSL
    return ClusterSpec(
        cluster_id="abc",
        kafka_version="4.3.1",
        security=security,
        nodes=tuple(
            NodeSpec(i + 1, racks[i], 9000 + i, 9100 + i, 9200 + i, 9300 + i if internal else None)
            for i in range(nodes)
        ),
    )


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_three_nodes_share_one_static_voter_set_and_replicate_three_ways() -> None:
    s = spec(3)
    rendered = [props(render_server_properties(s, n, Path("/d"), None)) for n in s.nodes]
    assert {r["controller.quorum.voters"] for r in rendered} == {"1@127.0.0.1:9100,2@127.0.0.1:9101,3@127.0.0.1:9102"}
    assert [r["broker.rack"] for r in rendered] == ["az-a", "az-b", "az-c"]
    assert rendered[0]["default.replication.factor"] == "3"
    assert rendered[0]["min.insync.replicas"] == "2"
    assert rendered[1]["listeners"] == "PLAINTEXT://127.0.0.1:9001,CONTROLLER://127.0.0.1:9101"
    assert "sasl.enabled.mechanisms" not in rendered[0]


def test_a_dynamic_quorum_finds_its_voters_through_bootstrap_servers_and_formats_them_by_directory() -> None:
    """KIP-853: `controller.quorum.voters` would pin a static set (kraft.version 0); a dynamic one is found through
    `controller.quorum.bootstrap.servers` and formatted with each voter's id, endpoint and directory id."""
    s = spec(3)
    s = replace(s, dynamic_quorum=True, nodes=tuple(replace(n, directory_id=f"dir{n.node_id}") for n in s.nodes))
    rendered = [props(render_server_properties(s, n, Path("/d"), None)) for n in s.nodes]
    assert all("controller.quorum.voters" not in r for r in rendered)
    assert {r["controller.quorum.bootstrap.servers"] for r in rendered} == {
        "127.0.0.1:9100,127.0.0.1:9101,127.0.0.1:9102"
    }
    assert s.initial_controllers == "1@127.0.0.1:9100:dir1,2@127.0.0.1:9101:dir2,3@127.0.0.1:9102:dir3"


def test_one_node_cannot_ask_for_more_replicas_than_it_has() -> None:
    s = spec(1)
    r = props(render_server_properties(s, s.nodes[0], Path("/d"), None))
    assert r["offsets.topic.replication.factor"] == "1"
    assert r["min.insync.replicas"] == "1"


def test_sasl_ssl_listener_uses_scram_512_and_keeps_inter_broker_traffic_internal() -> None:
    s = spec(1, Security.SASL_SSL)
    tls = TlsFiles(Path("/t/broker.p12"), "secret", Path("/t/ca.pem"))
    r = props(render_server_properties(s, s.nodes[0], Path("/d"), tls))
    assert r["advertised.listeners"] == "SASL_SSL://127.0.0.1:9000,INTERNAL://127.0.0.1:9300"
    assert r["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert r["inter.broker.listener.name"] == "INTERNAL"
    assert r["ssl.keystore.location"] == "/t/broker.p12"
    assert s.bootstrap_servers == "127.0.0.1:9000"
    assert s.internal_bootstrap == "127.0.0.1:9300"


def test_sasl_ssl_without_tls_files_is_refused() -> None:
    s = spec(1, Security.SASL_SSL)
    with pytest.raises(ValueError, match="TLS"):
        render_server_properties(s, s.nodes[0], Path("/d"), None)


def test_jmx_binds_loopback_on_one_port_and_password_never_in_flags() -> None:
    flags = jvm_flags(4, 9999, Path("/l/log4j.properties"), Path("/l"))
    assert "-Dcom.sun.management.jmxremote.port=9999" in flags
    assert "-Dcom.sun.management.jmxremote.rmi.port=9999" in flags
    assert "-Dcom.sun.management.jmxremote.host=127.0.0.1" in flags
    assert "-Dlog4j2.configurationFile=/l/log4j.properties" in flags
    assert any(f.startswith("-Dlog4j.configuration=file:") for f in jvm_flags(3, 1, Path("/x"), Path("/l")))


@pytest.mark.parametrize(("version", "backend"), [("4.3.1", "log4j-slf4j-impl"), ("3.9.2", "slf4j-reload4j")])
def test_pom_adds_the_logging_backend_core_lacks(version: str, backend: str) -> None:
    pom = render_pom(version)
    assert f"<artifactId>kafka_2.13</artifactId><version>{version}</version>" in pom
    assert backend in pom


def test_log_config_matches_the_logging_backend() -> None:
    assert "appender.file.fileName = ${sys:kafka.logs.dir}/server.log" in render_log_config(4)
    assert "log4j.appender.F.File=${kafka.logs.dir}/server.log" in render_log_config(3)


def test_cluster_id_is_a_kafka_uuid_never_read_as_an_option() -> None:
    ids = [new_cluster_id() for _ in range(2000)]  # a leading '-' has odds 1 in 64 per draw
    assert all(len(cid) == 22 and len(base64.urlsafe_b64decode(cid + "==")) == 16 for cid in ids)
    assert not any(cid.startswith("-") for cid in ids)


def test_tools_pom_names_perf_tools_and_mirrormaker() -> None:
    pom = render_pom("4.3.1", TOOLS)
    for artifact in ("kafka-tools", "connect-mirror", "connect-runtime"):
        assert f"<artifactId>{artifact}</artifactId><version>4.3.1</version>" in pom
    assert "kafka_2.13" not in pom


def test_client_jars_follow_the_cluster_up_to_the_newest_line_served_whole() -> None:
    assert client_version("3.9.2") == "3.9.2"
    assert client_version(CLIENT_VERSION) == CLIENT_VERSION
    assert client_version("4.4.0") == CLIENT_VERSION  # 4.4.0 serves no connect-mirror, no kafka-streams-examples
    assert client_version("4.10.0") == CLIENT_VERSION  # compared as numbers, not as text
    assert client_version("4.2.1") == "4.2.1"
