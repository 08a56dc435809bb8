"""Which host names a certificate's subject alternative names vouch for, by the HTTPS rules the per-cluster JMX
trust manager applies to every RMI connection (collectors/transport/trust.py)."""

from __future__ import annotations

import pytest

from collectors.transport.trust import SAN_DNS, SAN_IP, names_host

DEV = [(SAN_DNS, "localhost"), (SAN_IP, "127.0.0.1")]
"""The names a dev cluster's certificate holds (devstack/tls.py)."""


@pytest.mark.parametrize(
    ("sans", "host", "named"),
    [
        (DEV, "127.0.0.1", True),
        (DEV, "localhost", True),
        (DEV, "LOCALHOST.", True),
        (DEV, "127.0.0.2", False),  # loopback too, but not a name the certificate holds
        (DEV, "vm", False),
        ([(SAN_DNS, "127.0.0.1")], "127.0.0.1", False),  # an address is named only by an IP entry
        ([(SAN_IP, "::1")], "[::1]", True),
        ([(SAN_IP, "0:0:0:0:0:0:0:1")], "::1", True),
        ([(SAN_DNS, "*.kafka.example")], "b1.kafka.example", True),
        ([(SAN_DNS, "*.kafka.example")], "a.b1.kafka.example", False),  # one label only
        ([(SAN_DNS, "*.kafka.example")], "kafka.example", False),
        ([(SAN_DNS, "*.example")], "kafka.example", False),  # no wildcard over a top-level label
        ([(1, "ops@kafka.example")], "kafka.example", False),  # an e-mail entry names no host
        ([], "127.0.0.1", False),
    ],
)
def test_names_host(sans: list[tuple[int, str]], host: str, named: bool) -> None:
    assert names_host(sans, host) is named
