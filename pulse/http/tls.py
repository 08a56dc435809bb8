"""The one TLS setup of the listeners (`http.tls`): a TLS 1.2+ server context, loaded when the listener starts."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from pulse.config import HttpTlsConfig
from pulse.errors import ConfigError


@dataclass(frozen=True)
class ServerTls:
    """Certificate chain and private key, both PEM."""

    cert_file: Path
    key_file: Path

    @classmethod
    def from_config(cls, config: HttpTlsConfig | None) -> ServerTls | None:
        return None if config is None else cls(config.cert_file, config.key_file)

    def context(self, where: str = "http.tls") -> ssl.SSLContext:
        """A server context; ConfigError naming `where` (the config key) when the files do not load."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        except (ssl.SSLError, OSError) as exc:
            files = f"certificate {self.cert_file} with key {self.key_file}"
            raise ConfigError(f"{where}: cannot load {files}: {exc}") from exc
        return context
