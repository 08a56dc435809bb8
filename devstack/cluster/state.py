"""The cluster's state file (`state.json` in its home): spec and PIDs, so `dev status`, `dev down` and every other
command find a running cluster again from another process."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from devstack.topology import ClusterSpec, JmxSecurity, NodeSpec, Security
from pulse.errors import ClusterError

STATE_FILE = "state.json"


def load_state(home: Path) -> tuple[ClusterSpec, dict[int, int]]:
    """The spec and node PIDs in `home`'s state file; ClusterError when there is none or it cannot be read."""
    path = home / STATE_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterError(f"no dev cluster at {home} (no {STATE_FILE}); start one with `kafka-pulse dev up`") from None
    except json.JSONDecodeError as exc:
        raise ClusterError(f"{path}: not valid JSON ({exc}); remove {home} and start again") from exc
    try:
        nodes = tuple(
            NodeSpec(**{**node, "extra_jvm_flags": tuple(node.get("extra_jvm_flags", ()))}) for node in raw["nodes"]
        )
        jmx_security = JmxSecurity(raw.get("jmx_security", JmxSecurity.NONE.value))
        jars = tuple(str(jar) for jar in raw.get("extra_jars", ()))
        spec = ClusterSpec(
            raw["cluster_id"],
            raw["kafka_version"],
            Security(raw["security"]),
            nodes,
            jmx_security,
            extra_jars=jars,
            dynamic_quorum=bool(raw.get("dynamic_quorum", False)),
        )
        pids = {int(k): int(v) for k, v in raw.get("pids", {}).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ClusterError(f"{path}: unreadable state ({exc!r}); remove {home} and start again") from exc
    return spec, pids


def save_state(home: Path, spec: ClusterSpec, pids: dict[int, int]) -> None:
    """Write the state file atomically, so a reader never sees half of it."""
    state = {
        "cluster_id": spec.cluster_id,
        "kafka_version": spec.kafka_version,
        "security": spec.security.value,
        "jmx_security": spec.jmx_security.value,
        "bootstrap_servers": spec.bootstrap_servers,
        "nodes": [asdict(n) for n in spec.nodes],
        "pids": {str(k): v for k, v in pids.items()},
        "extra_jars": list(spec.extra_jars),
        "dynamic_quorum": spec.dynamic_quorum,
    }
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(home / STATE_FILE)
