"""Where each node of a dev cluster keeps its files (`<home>/node-<id>/`) and what they hold: server.properties,
the log4j config, the JMX management file, and the logs readiness is read from."""

from __future__ import annotations

from pathlib import Path

from devstack.cluster.logins import write_private
from devstack.runtime import KafkaRuntime
from devstack.topology import (
    ClusterSpec,
    JmxAuthFiles,
    NodeSpec,
    TlsFiles,
    render_jmx_management_properties,
    render_log_config,
    render_server_properties,
)


class NodeFiles:
    """The node directories under one cluster home."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def node_dir(self, node_id: int) -> Path:
        return self.home / f"node-{node_id}"

    def log_path(self, node_id: int) -> Path:
        """The broker's own log4j log, where readiness is read from."""
        return self.node_dir(node_id) / "logs" / "server.log"

    def stdout_path(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "logs" / "stdout.log"

    def jmx_config_file(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "management.properties"

    def write(
        self,
        runtime: KafkaRuntime,
        spec: ClusterSpec,
        node: NodeSpec,
        tls: TlsFiles | None,
        jmx_files: JmxAuthFiles | None,
    ) -> None:
        """The node's configuration files; those that may hold a password are private (0600)."""
        node_dir = self.node_dir(node.node_id)
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        # server.properties may hold the keystore password
        write_private(node_dir / "server.properties", render_server_properties(spec, node, node_dir / "data", tls))
        (node_dir / "log4j.properties").write_text(render_log_config(runtime.major))
        if jmx_files is not None:
            management = render_jmx_management_properties(node.jmx_port, jmx_files)
            write_private(self.jmx_config_file(node.node_id), management)

    def log_since(self, node_id: int, offset: int) -> str:
        """The node's log from byte `offset` on; empty before the log exists."""
        try:
            with open(self.log_path(node_id), "rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""
