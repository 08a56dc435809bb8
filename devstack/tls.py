"""A throwaway certificate authority and server certificates for the dev cluster's TLS (SASL_SSL, JMX) and tests.

Brokers read a PKCS#12 keystore (key + certificate + CA); librdkafka clients trust `ca.pem`, JVM clients (the
JMX transport) a PKCS#12 trust store. Everything is valid for 127.0.0.1 and localhost only, and lives in the
cluster's own directory.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devstack.topology import TlsFiles

VALIDITY = dt.timedelta(days=365)
LOOPBACK = ("localhost", "127.0.0.1")
"""The names the dev certificates hold by default."""


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


@dataclass(frozen=True)
class PemFiles:
    """A server certificate and key in PEM, for Python's `ssl` (the HTTP listener's TLS in tests)."""

    cert_file: Path
    key_file: Path
    ca_file: Path


def _new_ca(now: dt.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
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
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca_cert


def _issue_server_cert(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, now: dt.datetime, names: Sequence[str] = LOOPBACK
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName([_san(name) for name in names]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # tolerate small clock skew


def create_tls_files(directory: Path, names: Sequence[str] = LOOPBACK) -> TlsFiles:
    """Generate a CA and a broker certificate for `names` (DNS names or IP addresses) under `directory`; tests
    pass other names to see a client refuse a certificate that does not name its host."""
    directory.mkdir(parents=True, exist_ok=True)
    now = _now()
    ca_key, ca_cert = _new_ca(now)
    broker_key, broker_cert = _issue_server_cert(ca_key, ca_cert, now, names)
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


def create_pem_files(directory: Path) -> PemFiles:
    """Generate a CA and a loopback server certificate as PEM files (key mode 0600) under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    now = _now()
    ca_key, ca_cert = _new_ca(now)
    key, cert = _issue_server_cert(ca_key, ca_cert, now)
    files = PemFiles(directory / "server.pem", directory / "server-key.pem", directory / "ca.pem")
    files.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(
        files.key_file,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    return files


def write_truststore(ca_file: Path, path: Path) -> str:
    """A PKCS#12 trust store holding the CA of `ca_file` as a Java trusted-certificate entry; returns its password.

    Java ignores certificates in a PKCS#12 file unless they carry Oracle's trusted-key-usage attribute, which
    `serialize_java_truststore` writes; keytool would do the same but takes the password on its command line.
    """
    ca_cert = x509.load_pem_x509_certificate(ca_file.read_bytes())
    password = secrets.token_urlsafe(18)
    data = pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca_cert, b"kafka-pulse-dev-ca")],
        serialization.BestAvailableEncryption(password.encode()),
    )
    _write_private(path, data)
    return password
