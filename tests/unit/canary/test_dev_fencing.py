"""The canary's fault tests run a dev cluster whose controller fences a dead broker after 4 s, through
`ClusterSpec.broker_overrides` (devstack/topology.py `FAST_FENCING`); the default dev cluster keeps Kafka's 9 s."""

from dataclasses import replace
from pathlib import Path

from devstack.topology import FAST_FENCING, ClusterSpec, NodeSpec, Security, render_server_properties

NODES = tuple(NodeSpec(i, f"az-{c}", 9000 + i, 9100 + i, 9200 + i) for i, c in ((1, "a"), (2, "b"), (3, "c")))
SPEC = ClusterSpec("cid", "4.3.1", Security.PLAINTEXT, NODES)


def properties(spec: ClusterSpec) -> dict[str, str]:
    text = render_server_properties(spec, NODES[0], Path("/data"), None)
    return dict(line.split("=", 1) for line in text.splitlines())


def test_default_dev_cluster_keeps_kafkas_session_timeout() -> None:
    assert "broker.session.timeout.ms" not in properties(SPEC)


def test_overrides_are_applied_last_and_win() -> None:
    props = properties(replace(SPEC, broker_overrides=(*FAST_FENCING, ("num.io.threads", "4"))))
    assert (props["broker.session.timeout.ms"], props["broker.heartbeat.interval.ms"]) == ("4000", "500")
    assert props["num.io.threads"] == "4"
    assert props["broker.rack"] == "az-a"
