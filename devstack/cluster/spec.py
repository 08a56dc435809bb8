"""A new cluster's plan: ids, racks and free ports for each node, checked before anything is written or started."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from devstack.cluster.logins import SCRAM_USER
from devstack.topology import RACKS, ClusterSpec, JmxSecurity, NodeSpec, Security, enforcing_authorizer
from pulse.errors import ClusterError
from pulse.ports import free_ports


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid format).

    Like Kafka's own Uuid.randomUuid, ids starting with '-' are drawn again: the storage tool would read one
    as an option (seen here: "argument --cluster-id/-t: expected one argument").
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def plan_spec(
    brokers: int,
    kafka_version: str,
    security: Security,
    jmx_security: JmxSecurity = JmxSecurity.NONE,
    extra_jvm_flags: Mapping[int, Sequence[str]] | None = None,
    slow_disks: Mapping[int, int] | None = None,
    enforce_acls: bool = False,
    extra_jars: Sequence[Path] = (),
    broker_overrides: Mapping[str, str] | None = None,
    dynamic_quorum: bool = False,
) -> ClusterSpec:
    """The spec of a new cluster (see `DevCluster.plan` for the arguments); ClusterError names a bad one."""
    missing_jars = [str(jar) for jar in extra_jars if not jar.is_file()]
    if missing_jars:
        raise ClusterError(f"extra jar(s) not found: {', '.join(missing_jars)}")
    if enforce_acls and security is not Security.SASL_SSL:
        raise ClusterError("enforcing ACLs needs logins: use the sasl_ssl security mode")
    if brokers not in (1, 3):
        raise ClusterError(f"--brokers must be 1 or 3, not {brokers}")
    extra = dict(extra_jvm_flags or {})
    unknown = sorted(set(extra) - set(range(1, brokers + 1)))
    slow = dict(slow_disks or {})
    if sorted(set(slow) - set(range(1, brokers + 1))):
        raise ClusterError(f"slow disk for node(s) {sorted(slow)}, but the cluster has nodes 1-{brokers}")
    if unknown:
        raise ClusterError(f"extra JVM flags for node(s) {unknown}, but the cluster has nodes 1-{brokers}")
    per_node = 4 if security is Security.SASL_SSL else 3
    ports = free_ports(brokers * per_node)
    nodes = []
    for i in range(brokers):
        p = ports[i * per_node : (i + 1) * per_node]
        nodes.append(
            NodeSpec(
                node_id=i + 1,
                rack=RACKS[i],
                port=p[0],
                controller_port=p[1],
                jmx_port=p[2],
                internal_port=p[3] if security is Security.SASL_SSL else None,
                extra_jvm_flags=tuple(extra.get(i + 1, ())),
                slow_disk_ms=slow.get(i + 1),
                directory_id=new_cluster_id() if dynamic_quorum else None,  # a directory id is a Uuid too
            )
        )
    overrides = (*(enforcing_authorizer(SCRAM_USER) if enforce_acls else ()), *(broker_overrides or {}).items())
    jars = tuple(str(jar.resolve()) for jar in extra_jars)
    return ClusterSpec(
        new_cluster_id(), kafka_version, security, tuple(nodes), jmx_security, overrides, jars, dynamic_quorum
    )
