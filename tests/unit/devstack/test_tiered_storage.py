"""`dev up --tiered-storage`'s broker settings: Kafka's LocalTieredStorage with its directory in the cluster's home,
the metadata manager on the inter-broker listener, and the metadata topic no wider than the cluster."""

from __future__ import annotations

from pathlib import Path

from devstack.cluster import DevCluster
from devstack.tiered_storage import STORAGE_MANAGER, tiered_storage_overrides
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
