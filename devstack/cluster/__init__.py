"""A local KRaft cluster started from the cached Maven jars (`DevCluster`), one part per module:

spec.py        the plan of a new cluster: ids, racks, free ports
state.py       the state file (ports, PIDs, version) other processes find the cluster by
files.py       each node's directory and configuration files
logins.py      the SCRAM and JMX logins, in 0600 files
nodes.py       the node JVMs: format, start, await readiness, signal, stop
dev_cluster.py `DevCluster`, which composes them and injects faults
"""

from devstack.cluster.dev_cluster import DevCluster
from devstack.cluster.logins import (
    CREDENTIALS_FILE,
    JMX_CREDENTIALS_FILE,
    JMX_USER,
    SCRAM_USER,
    JmxCredentials,
    ScramCredentials,
)
from devstack.cluster.nodes import FAILED_MARKER, STARTED_MARKER
from devstack.cluster.spec import new_cluster_id
from devstack.cluster.state import STATE_FILE

__all__ = [
    "CREDENTIALS_FILE",
    "FAILED_MARKER",
    "JMX_CREDENTIALS_FILE",
    "JMX_USER",
    "SCRAM_USER",
    "STARTED_MARKER",
    "STATE_FILE",
    "DevCluster",
    "JmxCredentials",
    "ScramCredentials",
    "new_cluster_id",
]
