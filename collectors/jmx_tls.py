"""Host name verification for JMX over TLS, which Java's RMI-over-SSL socket factory does not do.

`javax.rmi.ssl.SslRMIClientSocketFactory` checks the broker's certificate chain against the trust store but not
that the certificate names the host it connects to, and the RMI server's stub brings its own copy of that factory.
So `JpypeTransport` first opens a TLS connection of its own to the registry port, with endpoint identification
(the HTTPS rules: a DNS or IP subject alternative name must match), then looks up the RMI server stub through the
registry and does the same for the endpoint the stub names, and connects with that very stub. A certificate that
does not name the host is refused with the names it holds. The RMI connections that follow are checked again,
chain and name, by the cluster's own trust store (`transport/trust.py`, docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_ENDPOINT = re.compile(r"endpoint:\[([^,\]\s]+):(\d+)")
"""How a `UnicastRef` prints its server's address inside the stub's `toString()` (`endpoint:[host:port,...]`)."""

SAN_KINDS = {1: "email", 2: "DNS", 6: "URI", 7: "IP"}
"""`X509Certificate.getSubjectAlternativeNames()` types (RFC 5280 GeneralName tags) shown in messages."""


class NameMismatch(Exception):
    """The endpoint's certificate is trusted but does not name the host connected to."""

    def __init__(self, host: str, port: int, names: Sequence[str]) -> None:
        self.host, self.port, self.names = host, port, tuple(names)
        held = ", ".join(self.names) or "no names"
        super().__init__(f"TLS certificate of {host}:{port} does not name {host!r} (it holds {held})")


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


def stub_endpoints(stub_text: str) -> list[Endpoint]:
    """The distinct endpoints an RMI stub's `toString()` names, in order; empty if it names none."""
    seen: list[Endpoint] = []
    for host, port in _ENDPOINT.findall(stub_text):
        endpoint = Endpoint(host.strip("[]"), int(port))
        if endpoint not in seen:
            seen.append(endpoint)
    return seen


def certificate_names(sans: Sequence[tuple[int, str]], subject: str) -> list[str]:
    """The names a certificate holds, as a message shows them: `DNS:x`, `IP:y`, then the subject (`CN=...`)."""
    names = [f"{SAN_KINDS.get(kind, str(kind))}:{value}" for kind, value in sans]
    return [*names, subject] if subject else names


class TlsVerifier:
    """Opens verifying TLS connections from the in-process JVM; one per transport, built on first use."""

    def __init__(self, truststore: str | None, truststore_password: str | None, timeout_s: float) -> None:
        self._truststore = truststore
        self._password = truststore_password
        self.timeout_ms = int(timeout_s * 1000)
        self._factory: Any = None

    def _socket_factory(self) -> Any:
        """An SSLSocketFactory trusting exactly the configured trust store (else the JVM's default one)."""
        if self._factory is None:
            import jpype

            KeyStore = jpype.JClass("java.security.KeyStore")
            TrustManagerFactory = jpype.JClass("javax.net.ssl.TrustManagerFactory")
            SSLContext = jpype.JClass("javax.net.ssl.SSLContext")
            store = None
            if self._truststore is not None:
                password = jpype.JString(self._password or "").toCharArray()
                store = KeyStore.getInstance(jpype.JClass("java.io.File")(self._truststore), password)
            trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm())
            trust.init(store)
            context = SSLContext.getInstance("TLS")
            context.init(None, trust.getTrustManagers(), None)
            self._factory = context.getSocketFactory()
        return self._factory

    def verify(self, endpoint: Endpoint) -> None:
        """Handshake with endpoint identification; raises `NameMismatch` when only the name is wrong, else the
        Java exception of the handshake (an untrusted chain, a refused connection)."""
        import jpype

        try:
            self._handshake(endpoint, identify=True)
        except jpype.JException as failed:
            try:
                certificate = self._handshake(endpoint, identify=False)
            except jpype.JException:
                raise failed from None  # the chain or the connection, not the name: Java's own message says which
            raise NameMismatch(endpoint.host, endpoint.port, _names_of(certificate)) from None

    def _handshake(self, endpoint: Endpoint, identify: bool) -> Any:
        """The peer's leaf certificate after a completed handshake with `endpoint`."""
        import jpype

        InetSocketAddress = jpype.JClass("java.net.InetSocketAddress")
        sock = self._socket_factory().createSocket()
        try:
            sock.setSoTimeout(self.timeout_ms)
            sock.connect(InetSocketAddress(endpoint.host, endpoint.port), self.timeout_ms)
            if identify:
                parameters = sock.getSSLParameters()
                parameters.setEndpointIdentificationAlgorithm("HTTPS")
                sock.setSSLParameters(parameters)
            sock.startHandshake()
            return sock.getSession().getPeerCertificates()[0]
        finally:
            sock.close()

    def verified_stub(self, registry: Endpoint, socket_factory: Any) -> Any:
        """The registry's `jmxrmi` stub, after verifying the registry's and the stub's endpoints' certificates."""
        import jpype

        self.verify(registry)
        LocateRegistry = jpype.JClass("java.rmi.registry.LocateRegistry")
        stub = LocateRegistry.getRegistry(registry.host, registry.port, socket_factory).lookup("jmxrmi")
        for endpoint in stub_endpoints(str(stub)):
            if endpoint != registry:
                self.verify(endpoint)
        return stub


def _names_of(certificate: Any) -> list[str]:
    sans = certificate.getSubjectAlternativeNames()
    pairs = [(int(entry.get(0)), str(entry.get(1))) for entry in sans] if sans is not None else []
    return certificate_names(pairs, str(certificate.getSubjectX500Principal().getName()))
