"""The dev cluster's logins: the SCRAM client login of a SASL_SSL cluster and the JMX login (and trust store) of a
cluster with JMX security, each kept in a 0600 file in the cluster's home; no password reaches a command line."""

from __future__ import annotations

import importlib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

from devstack import require_dev_extra
from devstack.topology import (
    SCRAM_MECHANISM,
    ClusterSpec,
    JmxAuthFiles,
    JmxSecurity,
    Security,
    TlsFiles,
    render_jmx_ssl_properties,
)

CREDENTIALS_FILE = "credentials.json"
JMX_CREDENTIALS_FILE = "jmx-credentials.json"
SCRAM_USER = "pulse"
JMX_USER = "pulse-monitor"
"""The JMX login of a secured dev cluster; its role is `readonly`, all a collector needs."""


@dataclass(frozen=True)
class ScramCredentials:
    """The dev cluster's client login; kept in a 0600 file, never printed by `dev status`."""

    username: str
    password: str
    mechanism: str
    ca_file: str


@dataclass(frozen=True)
class JmxCredentials:
    """How a JMX client logs in to a secured dev cluster; kept in a 0600 file like `ScramCredentials`."""

    username: str
    password: str
    ssl: bool
    truststore: str | None = None
    """PKCS#12 trust store holding the dev CA, for JVM clients; None without TLS."""
    truststore_password: str | None = None


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (passwords, keystore settings)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def tls_module() -> ModuleType:
    """The certificate code, imported only when a cluster needs TLS: it needs the `dev` extra's cryptography, and
    reading a running cluster's state (every command without a config does) must not."""
    require_dev_extra()
    return importlib.import_module("devstack.tls")


def read_scram_credentials(home: Path, spec: ClusterSpec) -> ScramCredentials | None:
    """The SCRAM login of a SASL_SSL cluster; None for PLAINTEXT."""
    path = home / CREDENTIALS_FILE
    if spec.security is Security.PLAINTEXT or not path.exists():
        return None
    return ScramCredentials(**json.loads(path.read_text()))


def read_jmx_credentials(home: Path, spec: ClusterSpec) -> JmxCredentials | None:
    """The JMX login (and trust store) of a cluster started with JMX security; None without."""
    path = home / JMX_CREDENTIALS_FILE
    if spec.jmx_security is JmxSecurity.NONE or not path.exists():
        return None
    return JmxCredentials(**json.loads(path.read_text()))


def write_jmx_security(home: Path, spec: ClusterSpec, tls: TlsFiles | None) -> JmxAuthFiles | None:
    """The JMX login, access and TLS files every node shares, and the client's copy of the login (all 0600).

    No password reaches a command line: the broker reads these files (the JVM rewrites the password file with
    salted hashes at the first login), and clients read `jmx-credentials.json` or their own config.
    """
    if spec.jmx_security is JmxSecurity.NONE:
        return None
    directory = home / "jmx"
    directory.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(18)
    files = JmxAuthFiles(directory / "jmxremote.password", directory / "jmxremote.access")
    write_private(files.password_file, f"{JMX_USER} {password}\n")
    write_private(files.access_file, f"{JMX_USER} readonly\n")
    creds = JmxCredentials(JMX_USER, password, ssl=False)
    if spec.jmx_security is JmxSecurity.AUTH_TLS:
        if tls is None:
            raise ValueError("JMX over TLS needs the cluster's TLS files")
        ssl_config = directory / "jmx-ssl.properties"
        write_private(ssl_config, render_jmx_ssl_properties(tls))
        files = JmxAuthFiles(files.password_file, files.access_file, ssl_config)
        truststore = home / "tls" / "truststore.p12"
        trust_password = tls_module().write_truststore(tls.ca_file, truststore)
        creds = JmxCredentials(JMX_USER, password, True, str(truststore), trust_password)
    write_private(home / JMX_CREDENTIALS_FILE, json.dumps(asdict(creds)))
    return files


def create_scram_user(home: Path, spec: ClusterSpec, tls: TlsFiles) -> None:
    """Create the SCRAM-SHA-512 login through the internal PLAINTEXT listener; the password never hits argv."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    password = secrets.token_urlsafe(18)
    admin = AdminClient({"bootstrap.servers": spec.internal_bootstrap})
    upsert = UserScramCredentialUpsertion(
        SCRAM_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    creds = ScramCredentials(SCRAM_USER, password, SCRAM_MECHANISM, str(tls.ca_file))
    write_private(home / CREDENTIALS_FILE, json.dumps(asdict(creds)))
