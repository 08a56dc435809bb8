"""Where kafka-pulse keeps things outside the repository: the Kafka jar cache and the dev cluster's state."""

import os
from pathlib import Path


def cache_dir() -> Path:
    """Downloaded runtimes (Kafka classpaths per version); shared by every checkout on the machine."""
    explicit = os.environ.get("KAFKA_PULSE_CACHE")
    if explicit:
        return Path(explicit)
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "kafka-pulse"


def state_dir() -> Path:
    """The dev cluster's state file, data and logs; `KAFKA_PULSE_HOME` moves it (tests use a temporary one)."""
    explicit = os.environ.get("KAFKA_PULSE_HOME")
    if explicit:
        return Path(explicit)
    root = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(root) / "kafka-pulse"
