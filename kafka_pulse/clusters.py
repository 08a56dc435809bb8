"""Which Kafka cluster a command talks to: the one the config names, or else the local dev cluster."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pulse.config import ClusterConfig, PulseConfig, load_config
from pulse.errors import ClusterError

if TYPE_CHECKING:
    from devstack import DevCluster

DEV_CLUSTER_NAME = "dev"


def load_or_default(config_path: Path | None, environ: Mapping[str, str]) -> PulseConfig:
    """The validated config file, or an all-defaults config when none is given."""
    return load_config(config_path, environ) if config_path is not None else PulseConfig()


def dev_cluster_config(cluster: DevCluster, name: str = DEV_CLUSTER_NAME) -> ClusterConfig:
    """Describe a running dev cluster as a config entry: bootstrap servers, SCRAM login and JMX per node."""
    security: dict[str, object] = {"protocol": "PLAINTEXT"}
    creds = cluster.credentials()
    if creds is not None:
        security = {
            "protocol": "SASL_SSL",
            "sasl": {"mechanism": creds.mechanism, "username": creds.username, "password": creds.password},
            "tls": {"ca_file": creds.ca_file},
        }
    login: dict[str, object] = {}
    trust: dict[str, object] = {}
    jmx_creds = cluster.jmx_credentials()
    if jmx_creds is not None:  # a dev cluster started with JMX auth (and TLS)
        login = {"username": jmx_creds.username, "password": jmx_creds.password, "ssl": jmx_creds.ssl}
        if jmx_creds.truststore is not None:
            trust = {"truststore": jmx_creds.truststore, "truststore_password": jmx_creds.truststore_password}
    brokers = [{"broker_id": n.node_id, "port": n.jmx_port, **login} for n in cluster.spec.nodes]
    jmx = {"brokers": brokers, **trust}
    return ClusterConfig.model_validate(
        {"name": name, "bootstrap_servers": cluster.spec.bootstrap_servers, "security": security, "jmx": jmx}
    )


def resolve_cluster(config: PulseConfig, name: str | None, dev_home: Path) -> ClusterConfig:
    """The named (or only) configured cluster; with none configured, the dev cluster at `dev_home`."""
    if config.clusters:
        return config.cluster(name)
    if name not in (None, DEV_CLUSTER_NAME):
        raise ClusterError(f"no cluster named {name!r}: the config names no clusters, only the dev cluster is known")
    from devstack import DevCluster  # the dev cluster's modules only without a configured cluster (`check` starts fast)

    return dev_cluster_config(DevCluster.load(dev_home))
