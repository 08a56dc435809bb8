"""`dev up --tiered-storage`: brokers that copy closed segments to a remote tier (KIP-405) on the local disk.

The remote storage is Kafka's own `LocalTieredStorage`, the one Kafka's tiered-storage tests run against: it ships
in the test classes of the `kafka-storage` module on Maven Central (`kafka-storage-<version>-test.jar`), and keeps
the "remote" segments in a directory every broker of the cluster shares. The segments' metadata goes through the
default `TopicBasedRemoteLogMetadataManager` (the `__remote_log_metadata` topic). A topic is tiered when created
with `remote.storage.enable=true`; `local.retention.ms|bytes` then bound what stays on the brokers' disks.

Versions: run and tested on 4.3.1. Maven Central serves 3.9.2's test jar (not run here) but not 4.4.0's ("Could
not find artifact", 2026-11-29, tried again at 19:43 UTC), and 4.3.1's does not load in a 4.4.0 broker
(NoClassDefFoundError: org/apache/kafka/common/utils/LogContext). So `dev up --tiered-storage` without a version
runs TIERED_STORAGE_VERSION rather than the default 4.4.0, and says so; with `--kafka-version 4.4.0` it fails at the
download with Maven's error.
"""

from __future__ import annotations

from pathlib import Path

from devstack.runtime import ensure_test_jar, version_key
from devstack.topology import Security

TIERED_STORAGE_VERSION = "4.3.1"
"""The newest Kafka whose kafka-storage test jar Maven Central serves and that runs here: what the tests pin and what
`dev up --tiered-storage` runs unless told a version, since the default (4.4.0) has no such jar."""
STORAGE_MANAGER = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
STORAGE_JAR_MODULE = "kafka-storage"
"""The Kafka module whose test jar holds `STORAGE_MANAGER` (4.x and 3.9)."""
REMOTE_DIR = "remote-tier"
"""The shared remote tier, under the dev cluster's home (so `dev down` removes it with the rest)."""
TASK_INTERVAL_MS = 2000
"""How often a leader's remote log manager looks for segments to copy (Kafka's default: 30 s)."""
RETENTION_CHECK_MS = 5000
"""How often local segments already copied are deleted past `local.retention.*` (default: 5 min)."""


def cluster_version(asked: str | None, default: str, tiered_storage: bool) -> tuple[str, str | None]:
    """The Kafka version `dev up` runs, and a note when it is not the one the user would expect: the version asked
    for; else the default, or TIERED_STORAGE_VERSION with remote storage on when the default is newer (no test jar)."""
    if asked is not None:
        return asked, None
    if tiered_storage and version_key(default) > version_key(TIERED_STORAGE_VERSION):
        note = (
            f"--tiered-storage runs Kafka {TIERED_STORAGE_VERSION}, not the default {default}: Maven Central serves no "
            f"kafka-storage test jar (LocalTieredStorage) for {default}"
        )
        return TIERED_STORAGE_VERSION, note
    return default, None


def tiered_storage_jar(version: str, cache: Path) -> Path:
    """The jar holding `LocalTieredStorage` for `version`, from the jar cache (copied from Maven Central once)."""
    return ensure_test_jar(version, cache, STORAGE_JAR_MODULE)


def tiered_storage_overrides(home: Path, security: Security, brokers: int) -> dict[str, str]:
    """server.properties entries (the same on every node) that turn remote storage on, with the remote tier in
    `home`/`REMOTE_DIR`; the metadata manager's clients use the inter-broker listener."""
    listener = "PLAINTEXT" if security is Security.PLAINTEXT else "INTERNAL"
    replication = str(min(3, brokers))
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": STORAGE_MANAGER,
        "rsm.config.dir": str(home / REMOTE_DIR),
        "rsm.config.delete.on.close": "false",
        "remote.log.metadata.manager.listener.name": listener,
        "rlmm.config.remote.log.metadata.topic.replication.factor": replication,
        "rlmm.config.remote.log.metadata.topic.num.partitions": "3",  # default 50: slow to create on 2 cores
        "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
        "log.retention.check.interval.ms": str(RETENTION_CHECK_MS),
    }
