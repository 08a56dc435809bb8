"""The slow disk's pure parts: the `dev up --slow-disk NODE:MS` value and the control file the mount re-reads
(tests/integration/devstack/test_slow_disk.py mounts it under a real broker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.slow_disk import Delays, parse_slow_disk
from pulse.errors import ClusterError


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("2:50", (2, 50), id="node 2, 50 ms"),
        pytest.param("1:0", (1, 0), id="zero: mounted, not slowed yet"),
    ],
)
def test_parse_slow_disk(value: str, want: tuple[int, int]) -> None:
    assert parse_slow_disk(value, 3) == want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("2", "'2': expected NODE:MS, e.g. 2:50", id="no ms"),
        pytest.param("b:50", "'b:50': expected NODE:MS", id="node not a number"),
        pytest.param("2:-5", "'2:-5': expected NODE:MS", id="negative"),
        pytest.param("4:50", "'4:50': node 4 is not one of the cluster's nodes 1-3", id="no such node"),
        pytest.param("1:20000", "'1:20000': 20000 ms per write is more than 10 s", id="fencing-long"),
    ],
)
def test_bad_slow_disk_values_are_refused_naming_them(value: str, message: str) -> None:
    with pytest.raises(ValueError, match="--slow-disk " + message.replace("(", r"\(").replace(")", r"\)")):
        parse_slow_disk(value, 3)


def test_the_control_file_round_trips_and_bad_ones_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "slow-disk.json"
    Delays(50, 200).write(path)
    assert Delays.read(path) == Delays(50.0, 200.0)
    path.write_text("{not json")
    with pytest.raises(ClusterError, match=f"slow disk control file {path}"):
        Delays.read(path)
    path.write_text('{"write_ms": -1}')
    with pytest.raises(ClusterError, match="delays must be >= 0 ms"):
        Delays.read(path)
