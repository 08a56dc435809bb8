"""`dev up`'s data shape (topics, partitions, committing groups, broker heap): pure logic, and the CLI refusing
nonsense before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from devstack.topology import PROFILES, DataShape, batched, check_fits, data_shape
from kafka_pulse.cli.main import cli


def test_large_profile_is_the_bench_shape() -> None:
    shape = data_shape("large", None, None, None)
    assert (shape.topics, shape.partitions, shape.groups) == (1000, 10_000, 1000)
    assert shape.replicas_per_broker(3) == 10_000  # replication 3 on 3 brokers: every broker holds every partition
    assert shape.heap_mb(3) == 1412


def test_options_override_the_profile_one_by_one() -> None:
    assert data_shape("large", None, 4, None) == DataShape(1000, 4, 1000)
    assert data_shape(None, 5, None, 2) == DataShape(5, 1, 2)
    assert data_shape(None, None, None, None).is_empty


def test_small_shapes_keep_the_dev_heap() -> None:
    assert DataShape(10, 3, 0).heap_mb(3) == 512
    assert DataShape(1000, 10, 0).heap_mb(1) == 1412


def test_groups_spread_over_the_topics_and_names_sort() -> None:
    shape = DataShape(3, 2, 7)
    pairs = shape.group_topics()
    assert [t for _, t in pairs] == ["shape-0000", "shape-0001", "shape-0002"] * 2 + ["shape-0000"]
    assert [g for g, _ in pairs] == sorted(g for g, _ in pairs)
    assert len(DataShape(12_000, 1, 0).topic_names()[-1]) == len("shape-11999")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("huge", None, None, None), "--profile must be one of small, large, not 'huge'"),
        ((None, -1, None, None), "--topics must be at least 0, not -1"),
        ((None, 5, 0, None), "--partitions-per-topic must be at least 1, not 0"),
        ((None, 5, None, -3), "--groups must be at least 0, not -3"),
        ((None, None, None, 10), "--groups 10 needs topics to commit on: give --topics too"),
    ],
)
def test_nonsense_is_refused_naming_the_option(
    args: tuple[str | None, int | None, int | None, int | None], message: str
) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        data_shape(*args)


def test_more_replicas_than_open_files_allow_is_refused() -> None:
    check_fits(PROFILES["large"], 3, 20_000)
    with pytest.raises(ValueError, match=r"10,000 replicas on each of 3 broker\(s\), more than 3,072 .*ulimit -n"):
        check_fits(PROFILES["large"], 3, 4096)


def test_batches_cover_every_item_once() -> None:
    assert batched(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert batched([], 3) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--topics", "-5"], "--topics must be at least 0, not -5"),
        (["--groups", "3"], "--groups 3 needs topics to commit on"),
        (["--topics", "1", "--partitions-per-topic", "0"], "--partitions-per-topic must be at least 1, not 0"),
        (["--topics", "many"], "'many' is not a valid integer"),
        (["--profile", "huge"], "'huge' is not one of 'small', 'large'"),
    ],
)
def test_dev_up_refuses_nonsense_before_starting(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_PULSE_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["dev", "up", *argv])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "dev").exists()  # nothing planned, written or started
