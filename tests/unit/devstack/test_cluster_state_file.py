"""The dev cluster's state file keeps what another process needs to act on the cluster (devstack/cluster/state.py)."""

from __future__ import annotations

from pathlib import Path

from devstack.cluster.spec import plan_spec
from devstack.cluster.state import load_state, save_state
from devstack.topology import Security


def test_a_dynamic_quorum_and_its_directory_ids_survive_the_state_file(tmp_path: Path) -> None:
    """`remove-controller` from another process needs the voter's directory id, chosen when the cluster is planned."""
    spec = plan_spec(3, "4.3.1", Security.PLAINTEXT, dynamic_quorum=True)
    assert len({n.directory_id for n in spec.nodes}) == 3 and None not in {n.directory_id for n in spec.nodes}
    save_state(tmp_path, spec, {1: 11})
    assert load_state(tmp_path) == (spec, {1: 11})


def test_a_static_quorum_has_no_directory_ids_and_reads_back_static(tmp_path: Path) -> None:
    spec = plan_spec(1, "4.3.1", Security.PLAINTEXT)
    assert spec.nodes[0].directory_id is None and not spec.dynamic_quorum
    save_state(tmp_path, spec, {})
    assert load_state(tmp_path) == (spec, {})
