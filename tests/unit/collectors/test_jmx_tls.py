"""The pure parts of JMX host name verification: which endpoints an RMI stub names, and how a certificate's names
are shown in the refusal."""

from __future__ import annotations

import pytest

from collectors.jmx_tls import Endpoint, NameMismatch, certificate_names, stub_endpoints

# As OpenJDK 17 prints the stub the JMX agent's registry returns: the endpoint, then the stub's client socket
# factory when it has one (objID shortened).
STUB = (
    "RMIServerImpl_Stub[UnicastRef2 [liveRef: [endpoint:[127.0.0.1:41413,"
    "javax.rmi.ssl.SslRMIClientSocketFactory@1b2c3d4](remote),objID:[3ec90d99:1a20fbf53e2:-7fff, -782704]]]]"
)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(STUB, [Endpoint("127.0.0.1", 41413)], id="jdk17-ssl-stub"),
        pytest.param(STUB + STUB, [Endpoint("127.0.0.1", 41413)], id="repeated-once"),
        pytest.param(
            "UnicastRef [liveRef: [endpoint:[broker-1.example:9999](remote)",
            [Endpoint("broker-1.example", 9999)],
            id="dns-name-no-factory",
        ),
        pytest.param("RMIServerImpl_Stub[UnicastRef [liveRef: objID:[0]]]", [], id="no-endpoint"),
    ],
)
def test_stub_endpoints(text: str, want: list[Endpoint]) -> None:
    assert stub_endpoints(text) == want


def test_certificate_names_show_san_kinds_then_the_subject() -> None:
    names = certificate_names([(2, "kafka-1.example"), (7, "10.0.0.1"), (9, "1.2.3")], "CN=kafka-1,O=x")
    assert names == ["DNS:kafka-1.example", "IP:10.0.0.1", "9:1.2.3", "CN=kafka-1,O=x"]


def test_the_refusal_names_host_port_and_every_name_held() -> None:
    message = str(NameMismatch("127.0.0.1", 9999, ["DNS:elsewhere.example", "CN=elsewhere.example"]))
    assert message == (
        "TLS certificate of 127.0.0.1:9999 does not name '127.0.0.1' (it holds DNS:elsewhere.example, "
        "CN=elsewhere.example)"
    )
    assert str(NameMismatch("h", 1, [])).endswith("(it holds no names)")
