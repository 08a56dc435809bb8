"""A throwaway certificate authority and broker certificate for the dev cluster's SASL_SSL listener.

Brokers read a PKCS#12 keystore (key + certificate + CA); clients trust `ca.pem`. Everything is valid for
127.0.0.1 and localhost only, and lives in the cluster's own directory.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pulse.dev.topology import TlsFiles

VALIDITY = dt.timedelta(days=365)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-pulse dev"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _write_private(path: Path, data: bytes) -> None:
    """Write a secret file readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def create_tls_files(directory: Path) -> TlsFiles:
    """Generate a CA and a loopback broker certificate under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # tolerate small clock skew

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kafka-pulse dev CA"))
        .issuer_name(_name("kafka-pulse dev CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip

    broker_key = ec.generate_private_key(ec.SECP256R1())
    broker_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(broker_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    ca_file = directory / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    password = secrets.token_urlsafe(18)
    keystore = directory / "broker.p12"
    _write_private(
        keystore,
        pkcs12.serialize_key_and_certificates(
            b"broker",
            broker_key,
            broker_cert,
            [ca_cert],
            serialization.BestAvailableEncryption(password.encode()),
        ),
    )
    return TlsFiles(keystore=keystore, keystore_password=password, ca_file=ca_file)
