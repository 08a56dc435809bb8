"""The dev cluster's per-node JVM options and JMX security files: rendering and state, no processes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import pkcs12

from devstack.cluster import DevCluster
from devstack.tls import create_tls_files, write_truststore
from devstack.topology import (
    JmxAuthFiles,
    JmxSecurity,
    Security,
    TlsFiles,
    jvm_flags,
    render_jmx_management_properties,
    render_jmx_ssl_properties,
    render_server_properties,
)
from pulse.errors import ClusterError


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_extra_flags_come_last_so_they_win_over_ours() -> None:
    agent = "-javaagent:/c/jmx_prometheus_javaagent-1.0.1.jar=127.0.0.1:9404:/c/rules.yaml"
    flags = jvm_flags(4, 9999, Path("/l/log4j.properties"), Path("/l"), extra=[agent, "-Xmx768m"])
    assert flags[-2:] == [agent, "-Xmx768m"]
    assert flags.index("-Xmx512m") < flags.index("-Xmx768m")


def test_secured_jmx_puts_every_jmx_setting_in_the_config_file_and_none_on_argv() -> None:
    flags = jvm_flags(
        4, 9999, Path("/l/log4j.properties"), Path("/l"), jmx_config_file=Path("/n/management.properties")
    )
    assert "-Dcom.sun.management.config.file=/n/management.properties" in flags
    # A jmxremote.* system property would override the file (authenticate=false, say): there must be none.
    assert not [f for f in flags if f.startswith("-Dcom.sun.management.jmxremote")]
    assert "-Djava.rmi.server.hostname=127.0.0.1" in flags


def test_management_properties_turn_on_login_and_tls_for_connector_and_registry() -> None:
    files = JmxAuthFiles(Path("/j/jmxremote.password"), Path("/j/jmxremote.access"), Path("/j/jmx-ssl.properties"))
    p = props(render_jmx_management_properties(9999, files))
    assert p["com.sun.management.jmxremote.port"] == p["com.sun.management.jmxremote.rmi.port"] == "9999"
    assert p["com.sun.management.jmxremote.host"] == "127.0.0.1"
    assert p["com.sun.management.jmxremote.authenticate"] == "true"
    assert p["com.sun.management.jmxremote.password.file"] == "/j/jmxremote.password"
    assert p["com.sun.management.jmxremote.ssl"] == p["com.sun.management.jmxremote.registry.ssl"] == "true"
    assert p["com.sun.management.jmxremote.ssl.config.file"] == "/j/jmx-ssl.properties"
    plain = props(render_jmx_management_properties(9999, JmxAuthFiles(Path("/p"), Path("/a"))))
    assert plain["com.sun.management.jmxremote.ssl"] == "false"
    assert "com.sun.management.jmxremote.registry.ssl" not in plain


def test_jmx_ssl_properties_hold_the_keystore_password_for_the_agent_to_read() -> None:
    p = props(render_jmx_ssl_properties(TlsFiles(Path("/t/broker.p12"), "pw", Path("/t/ca.pem"))))
    assert p == {
        "javax.net.ssl.keyStore": "/t/broker.p12",
        "javax.net.ssl.keyStoreType": "PKCS12",
        "javax.net.ssl.keyStorePassword": "pw",
    }


def test_plan_keeps_node_flags_and_jmx_security_across_save_and_load(tmp_path: Path) -> None:
    flags = {1: ["-javaagent:/a.jar=127.0.0.1:1:/r.yaml"]}
    planned = DevCluster.plan(tmp_path, 3, "4.3.1", Security.PLAINTEXT, JmxSecurity.AUTH_TLS, flags)
    planned.save()
    loaded = DevCluster.load(tmp_path)
    assert loaded.spec == planned.spec
    assert loaded.node(1).extra_jvm_flags == ("-javaagent:/a.jar=127.0.0.1:1:/r.yaml",)
    assert loaded.node(2).extra_jvm_flags == ()
    assert loaded.spec.jmx_security is JmxSecurity.AUTH_TLS


def test_state_files_from_before_jmx_security_still_load(tmp_path: Path) -> None:
    planned = DevCluster.plan(tmp_path, 1, "4.3.1", Security.PLAINTEXT)
    planned.save()
    state = json.loads((tmp_path / "state.json").read_text())
    del state["jmx_security"]
    for node in state["nodes"]:
        del node["extra_jvm_flags"]
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert DevCluster.load(tmp_path).spec == planned.spec


def test_flags_for_a_node_the_cluster_lacks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=r"node\(s\) \[2\].*nodes 1-1"):
        DevCluster.plan(tmp_path, 1, "4.3.1", Security.PLAINTEXT, extra_jvm_flags={2: ["-Dx=1"]})


def test_truststore_holds_the_ca_and_only_its_owner_may_read_it(tmp_path: Path) -> None:
    tls = create_tls_files(tmp_path)
    password = write_truststore(tls.ca_file, tmp_path / "truststore.p12")
    loaded = pkcs12.load_pkcs12((tmp_path / "truststore.p12").read_bytes(), password.encode())
    assert loaded.key is None
    assert [c.certificate.subject.rfc4514_string() for c in loaded.additional_certs] == [
        "CN=kafka-pulse dev CA,O=kafka-pulse dev"
    ]
    assert stat.S_IMODE((tmp_path / "truststore.p12").stat().st_mode) == 0o600


def test_plan_puts_extra_jars_and_broker_overrides_in_the_spec_and_keeps_the_jars_across_load(tmp_path: Path) -> None:
    jar = tmp_path / "cruise-control-metrics-reporter.jar"
    jar.write_bytes(b"PK")
    reporter = "com.linkedin.kafka.cruisecontrol.metricsreporter.CruiseControlMetricsReporter"
    planned = DevCluster.plan(
        tmp_path / "dev",
        3,
        "4.3.1",
        Security.PLAINTEXT,
        extra_jars=[jar],
        broker_overrides={"metric.reporters": reporter},
    )
    assert planned.spec.extra_jars == (str(jar),)
    text = render_server_properties(planned.spec, planned.node(2), tmp_path / "data", None)
    assert props(text)["metric.reporters"] == reporter
    planned.save()
    assert DevCluster.load(tmp_path / "dev").spec.extra_jars == (str(jar),)


def test_plan_refuses_an_extra_jar_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=r"extra jar\(s\) not found: .*/absent\.jar"):
        DevCluster.plan(tmp_path, 3, "4.3.1", Security.PLAINTEXT, extra_jars=[tmp_path / "absent.jar"])


def test_a_state_file_from_before_extra_jars_loads_with_none(tmp_path: Path) -> None:
    DevCluster.plan(tmp_path, 1, "4.3.1", Security.PLAINTEXT).save()
    state = json.loads((tmp_path / "state.json").read_text())
    del state["extra_jars"]
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert DevCluster.load(tmp_path).spec.extra_jars == ()
