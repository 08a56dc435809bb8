"""The local development stack: Kafka clusters from Maven Central jars, and the services tests run beside them.

It ships behind the `dev` extra (`pip install 'kafka-pulse[dev]'`), which brings the certificate code's
`cryptography`; everything else in kafka-pulse runs without it.
"""

from __future__ import annotations

import importlib

from pulse.errors import DependencyMissing

__all__ = ["require_dev_extra"]


def require_dev_extra() -> None:
    """Refuse, naming the fix, when the `dev` extra is not installed: a dev command must not fail half-way."""
    try:
        importlib.import_module("cryptography")
    except ImportError as exc:
        raise DependencyMissing("kafka-pulse dev needs the dev extra: pip install 'kafka-pulse[dev]'") from exc
