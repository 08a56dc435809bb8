"""Per-broker connection check: an ApiVersions request on a connection to that broker alone (the canary's health
board and `kafka-pulse check` both ask it).

librdkafka routes a metadata request to whichever broker it likes, so it cannot say whether one particular broker
answers; a raw ApiVersions v0 exchange can. ApiVersions is served before SASL authentication, so the check needs
only TCP (and TLS when the listener uses it). A SIGSTOPped broker accepts the connection (the kernel does) but
never answers: that is a timeout, which is exactly what we want to see.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from dataclasses import dataclass

from pulse.config import ClusterConfig

_API_VERSIONS = 18
_CLIENT_ID = b"kafka-pulse-canary"


@dataclass(frozen=True)
class CheckResult:
    """One connection check of one broker."""

    broker: int
    ok: bool
    latency_s: float
    """Connect + (TLS) + ApiVersions round trip; up to the timeout when it failed."""
    error: str | None = None
    """`timeout`, `refused`, `tls`, `protocol` or the OS error name."""

    @property
    def is_dead(self) -> bool:
        """Refused or reset: nothing listens on the broker's port (the process is gone), unlike a timeout, which a
        hung broker and a merely slow one (a loaded host) both give."""
        return self.error in ("refused", "ConnectionResetError")


def tls_context(cluster: ClusterConfig) -> ssl.SSLContext | None:
    """The TLS context for the cluster's listener, or None for PLAINTEXT / SASL_PLAINTEXT."""
    security = cluster.security
    if security.protocol not in ("SSL", "SASL_SSL"):
        return None
    tls = security.tls
    context = ssl.create_default_context(cafile=str(tls.ca_file) if tls and tls.ca_file else None)
    if tls is not None:
        context.check_hostname = tls.verify_hostname
        if tls.cert_file is not None and tls.key_file is not None:
            password = tls.key_password.get_secret_value() if tls.key_password else None
            context.load_cert_chain(str(tls.cert_file), str(tls.key_file), password)
    return context


def api_versions_request(correlation_id: int) -> bytes:
    """ApiVersions v0 with request header v1: no body."""
    header = struct.pack(">hhih", _API_VERSIONS, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    return struct.pack(">i", len(header)) + header


def parse_api_versions_response(frame: bytes, correlation_id: int) -> int:
    """The response's error code; ValueError when the frame is not the answer to our request."""
    if len(frame) < 6:
        raise ValueError(f"response of {len(frame)} bytes is too short")
    got_id, error_code = struct.unpack(">ih", frame[:6])
    if got_id != correlation_id:
        raise ValueError(f"correlation id {got_id}, expected {correlation_id}")
    return int(error_code)


MAX_RESPONSE_BYTES = 1 << 20
"""An ApiVersions answer is a few KiB; a larger announced size is not a Kafka broker, so it is never buffered."""


def check_broker(
    broker: int, host: str, port: int, timeout_s: float, context: ssl.SSLContext | None = None
) -> CheckResult:
    """Ask one broker for its API versions within `timeout_s`; never raises."""
    started = time.monotonic()

    def result(ok: bool, error: str | None = None) -> CheckResult:
        return CheckResult(broker, ok, time.monotonic() - started, error)

    correlation_id = int(started * 1000) & 0x7FFFFFFF
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            raw.settimeout(max(timeout_s - (time.monotonic() - started), 0.001))
            # wrap_socket detaches `raw`, so the TLS socket must be closed itself (else its fd waits for the GC).
            with context.wrap_socket(raw, server_hostname=host) if context is not None else raw as conn:
                conn.sendall(api_versions_request(correlation_id))
                (size,) = struct.unpack(">i", read_exactly(conn, 4))
                if not 6 <= size <= MAX_RESPONSE_BYTES:
                    raise ValueError(f"response size {size} outside 6..{MAX_RESPONSE_BYTES}")
                error_code = parse_api_versions_response(read_exactly(conn, size), correlation_id)
                return result(error_code == 0, None if error_code == 0 else f"error code {error_code}")
    except TimeoutError:
        return result(False, "timeout")
    except ConnectionRefusedError:
        return result(False, "refused")
    except ssl.SSLError:
        return result(False, "tls")
    except ValueError:
        return result(False, "protocol")
    except OSError as exc:
        return result(False, type(exc).__name__)


def read_exactly(conn: socket.socket, count: int) -> bytes:
    """`count` bytes of a Kafka answer; a broker closing the connection early is an error, not a short read."""
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise ConnectionResetError("connection closed by the broker")
        data += chunk
    return data
