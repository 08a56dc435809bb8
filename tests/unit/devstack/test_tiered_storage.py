"""`dev up --tiered-storage`'s broker settings: Kafka's LocalTieredStorage with its directory in the cluster's home,
the metadata manager on the inter-broker listener, and the metadata topic no wider than the cluster."""

from __future__ import annotations

from pathlib import Path

from devstack.cluster import DevCluster
from devstack.runtime import DEFAULT_VERSION, LEGACY_VERSION
from devstack.tiered_storage import STORAGE_MANAGER, TIERED_STORAGE_VERSION, cluster_version, tiered_storage_overrides
from devstack.topology import Security, render_server_properties


def test_remote_storage_is_on_with_the_tier_in_the_clusters_home(tmp_path: Path) -> None:
    overrides = tiered_storage_overrides(tmp_path, Security.PLAINTEXT, 1)
    assert overrides["remote.log.storage.system.enable"] == "true"
    assert overrides["remote.log.storage.manager.class.name"] == STORAGE_MANAGER
    assert overrides["rsm.config.dir"] == str(tmp_path / "remote-tier")
    assert overrides["remote.log.metadata.manager.listener.name"] == "PLAINTEXT"
    assert overrides["rlmm.config.remote.log.metadata.topic.replication.factor"] == "1"


def test_a_sasl_cluster_uses_its_internal_listener_and_three_replicas(tmp_path: Path) -> None:
    overrides = tiered_storage_overrides(tmp_path, Security.SASL_SSL, 3)
    assert overrides["remote.log.metadata.manager.listener.name"] == "INTERNAL"
    assert overrides["rlmm.config.remote.log.metadata.topic.replication.factor"] == "3"


def test_the_overrides_reach_every_nodes_server_properties(tmp_path: Path) -> None:
    overrides = tiered_storage_overrides(tmp_path, Security.PLAINTEXT, 3)
    cluster = DevCluster.plan(tmp_path, 3, "4.3.1", Security.PLAINTEXT, broker_overrides=overrides)
    for node in cluster.spec.nodes:
        text = render_server_properties(cluster.spec, node, tmp_path / "data", None)
        assert f"remote.log.storage.manager.class.name={STORAGE_MANAGER}\n" in text
        assert "remote.log.storage.system.enable=true\n" in text


def test_without_a_version_remote_storage_runs_the_line_whose_test_jar_is_served() -> None:
    """The default (4.4.0) has no kafka-storage test jar on Maven Central: `dev up --tiered-storage` runs 4.3.1 and
    says why; without the flag, or with a version asked for, nothing is changed."""
    assert DEFAULT_VERSION == "4.4.0" and TIERED_STORAGE_VERSION == "4.3.1"
    version, note = cluster_version(None, DEFAULT_VERSION, tiered_storage=True)
    assert version == TIERED_STORAGE_VERSION and note is not None
    assert "kafka-storage test jar" in note and "4.4.0" in note
    assert cluster_version(None, DEFAULT_VERSION, tiered_storage=False) == (DEFAULT_VERSION, None)
    assert cluster_version("4.4.0", DEFAULT_VERSION, tiered_storage=True) == ("4.4.0", None)  # Maven's error, as asked
    assert cluster_version(LEGACY_VERSION, DEFAULT_VERSION, tiered_storage=True) == (LEGACY_VERSION, None)
    assert cluster_version(None, TIERED_STORAGE_VERSION, tiered_storage=True) == (TIERED_STORAGE_VERSION, None)
