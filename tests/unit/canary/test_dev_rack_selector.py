"""The dev cluster lets rack-aware consumers fetch from the closest replica (KIP-392), which the canary's
closest-replica probe needs."""

from pathlib import Path

from devstack.topology import ClusterSpec, NodeSpec, Security, render_server_properties


def test_brokers_select_replicas_by_rack() -> None:
    nodes = tuple(NodeSpec(i, f"az-{c}", 9000 + i, 9100 + i, 9200 + i) for i, c in ((1, "a"), (2, "b"), (3, "c")))
    spec = ClusterSpec("cid", "4.3.1", Security.PLAINTEXT, nodes)
    props = dict(
        line.split("=", 1) for line in render_server_properties(spec, nodes[0], Path("/data"), None).splitlines()
    )
    assert props["replica.selector.class"] == "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    assert props["broker.rack"] == "az-a"
