"""Per-cluster trust for JMX over TLS in the one in-process JVM, with host name verification on every connection.

RMI's `SslRMIClientSocketFactory` (the server's stub brings it) takes the JVM's default `SSLContext` once and keeps
it, so trust-store system properties set per connect made every later cluster be verified against the first one's
store. Instead one default context is installed before the first TLS connect, and its trust manager picks the
store per connection: a transport marks the thread it connects and reads on with its cluster's trust and the hosts
it reaches (`JmxPeer`), and the trust manager checks the chain with that trust store and that the leaf
certificate names one of those hosts (DNS or IP subject alternative name, as HTTPS does). JPype implements only
Java interfaces, so this is an `X509TrustManager`, which is not handed the socket: hence the thread mark. RMI's own
threads (the DGC lease renewer) open connections to endpoints a marked thread reached first; there a certificate is
accepted only if a marked handshake already verified that very certificate.
"""

from __future__ import annotations

import hashlib
import ipaddress
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

_Method = TypeVar("_Method", bound=Callable[..., Any])

SAN_DNS, SAN_IP = 2, 7
"""`X509Certificate.getSubjectAlternativeNames()` types (RFC 5280 GeneralName tags) a host name can match."""


def names_host(sans: Sequence[tuple[int, str]], host: str) -> bool:
    """Whether a certificate's subject alternative names name `host` by the HTTPS rules: an IP address only by an
    IP entry, a DNS name by a DNS entry (case-insensitive; `*.` matches one left-most label); no CN fallback."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    for kind, value in sans:
        if address is not None:
            if kind == SAN_IP and _same_address(value, address):
                return True
        elif kind == SAN_DNS and _dns_matches(value.lower().rstrip("."), host.lower().rstrip(".")):
            return True
    return False


def _same_address(value: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    try:
        return ipaddress.ip_address(value) == address
    except ValueError:
        return False


def _dns_matches(pattern: str, host: str) -> bool:
    if pattern.startswith("*."):
        label, _, rest = host.partition(".")
        return bool(label) and rest == pattern[2:] and "." in rest
    return pattern == host


@dataclass(frozen=True)
class ClusterTrust:
    """One trust store, loaded once per process (`TrustRouter.trust`): its chain check, in the JVM."""

    label: str
    """The trust store's path, or `the JVM's default trust store`: named in refusals."""
    manager: Any
    """The JDK's X509TrustManager for the store."""


@dataclass
class JmxPeer:
    """What a transport's thread is connecting to: its cluster's trust and the hosts it may reach (the configured
    broker host, then the endpoints its RMI stub names)."""

    trust: ClusterTrust
    hosts: set[str] = field(default_factory=set)


class TrustRouter:
    """The JVM's default SSLContext's trust, routed per connection by the thread's `JmxPeer`; one per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._installed = False
        """Set once the JVM's default SSLContext is this router's."""
        self._stores: dict[tuple[str | None, str | None], ClusterTrust] = {}
        self._verified: set[bytes] = set()
        """SHA-256 of leaf certificates a marked handshake verified: what an unmarked (RMI-owned) thread accepts."""
        self._local = threading.local()

    def trust(self, truststore: str | None, password: str | None) -> ClusterTrust:
        """The trust of one store (None: the JVM's default), loaded on first use and shared by its transports;
        raises if the router could not become the JVM's default, so no TLS connect runs without it."""
        import jpype

        self.install()
        with self._lock:
            key = (truststore, password)
            if key not in self._stores:
                KeyStore = jpype.JClass("java.security.KeyStore")
                TrustManagerFactory = jpype.JClass("javax.net.ssl.TrustManagerFactory")
                store = None
                if truststore is not None:
                    secret = jpype.JString(password or "").toCharArray()
                    store = KeyStore.getInstance(jpype.JClass("java.io.File")(truststore), secret)
                factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm())
                factory.init(store)
                X509TrustManager = jpype.JClass("javax.net.ssl.X509TrustManager")
                manager = next(m for m in factory.getTrustManagers() if isinstance(m, X509TrustManager))
                label = truststore or "the JVM's default trust store"
                self._stores[key] = ClusterTrust(label, manager)
            return self._stores[key]

    @contextmanager
    def peer(self, peer: JmxPeer) -> Iterator[JmxPeer]:
        """Mark this thread's TLS handshakes, for the block, as being with `peer`."""
        previous = getattr(self._local, "peer", None)
        self._local.peer = peer
        try:
            yield peer
        finally:
            self._local.peer = previous

    def install(self) -> None:
        """Make the routing trust manager the JVM's default SSLContext's; `jvm.py` calls it as the JVM starts, so
        before any RMI TLS socket exists (`SslRMIClientSocketFactory` keeps the default it first sees)."""
        import jpype

        with self._lock:
            if self._installed:
                return
            SSLContext = jpype.JClass("javax.net.ssl.SSLContext")
            context = SSLContext.getInstance("TLS")
            manager = _routing_trust_manager_class()(self)
            context.init(None, jpype.JArray(jpype.JClass("javax.net.ssl.TrustManager"))([manager]), None)
            SSLContext.setDefault(context)
            self._installed = True

    def check_server(self, chain: Any, auth_type: str) -> None:
        """Verify a server chain for the thread's peer; raise a Java CertificateException to refuse it."""
        import jpype

        CertificateException = jpype.JClass("java.security.cert.CertificateException")
        leaf = chain[0]
        fingerprint = hashlib.sha256(bytes(leaf.getEncoded())).digest()
        peer: JmxPeer | None = getattr(self._local, "peer", None)
        if peer is None:
            with self._lock:
                if fingerprint in self._verified:
                    return
            raise CertificateException(
                "JMX over TLS: a connection from a thread no transport marked, to a certificate no transport verified"
            )
        peer.trust.manager.checkServerTrusted(chain, auth_type)  # raises the JDK's own refusal (PKIX ...)
        sans = _sans(leaf)
        if not any(names_host(sans, host) for host in peer.hosts):
            held = ", ".join(f"{'IP' if kind == SAN_IP else 'DNS'}:{value}" for kind, value in sans) or "no names"
            wanted = ", ".join(sorted(peer.hosts))
            raise CertificateException(f"No subject alternative name matches {wanted} (the certificate holds {held})")
        with self._lock:
            self._verified.add(fingerprint)


def _sans(certificate: Any) -> list[tuple[int, str]]:
    entries = certificate.getSubjectAlternativeNames()
    if entries is None:
        return []
    return [(int(e.get(0)), str(e.get(1))) for e in entries if int(e.get(0)) in (SAN_DNS, SAN_IP)]


def _routing_trust_manager_class() -> Any:
    """The Java-facing trust manager, defined once the JVM runs (`@JImplements` needs it)."""
    import jpype

    override = cast("Callable[[_Method], _Method]", jpype.JOverride)  # JPype's decorator carries no types

    @jpype.JImplements("javax.net.ssl.X509TrustManager")
    class RoutingTrustManager:
        def __init__(self, router: TrustRouter) -> None:
            self._router = router

        @override
        def checkClientTrusted(self, chain: Any, auth_type: str) -> None:
            raise jpype.JClass("java.security.cert.CertificateException")("JMX clients present no certificates here")

        @override
        def checkServerTrusted(self, chain: Any, auth_type: str) -> None:
            self._router.check_server(chain, str(auth_type))

        @override
        def getAcceptedIssuers(self) -> Any:
            return jpype.JArray(jpype.JClass("java.security.cert.X509Certificate"))(0)

    return RoutingTrustManager


ROUTER = TrustRouter()
"""The process's one router: the default SSLContext is JVM-wide, so is this."""
