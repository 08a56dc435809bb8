"""Rendezvous sharding of brokers over `collect` processes (collectors/shard.py), and `collectors.shard` in the
config: every broker has exactly one owner for any cluster size and shard count, a change of count moves only what
it must, and a broker coming or going moves nobody else."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collectors.shard import Shard, assign, broker_key, client_key, cluster_state_key, owner, plan_shard, weight
from collectors.shard_metrics import ShardCollector
from pulse.config import parse_config
from pulse.errors import ConfigError

SIZES = [0, 1, 2, 3, 5, 12, 100, 2000]
COUNTS = [1, 2, 3, 4, 7, 16]


def brokers(cluster: str, size: int) -> list[str]:
    return [broker_key(cluster, b) for b in range(1, size + 1)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("count", COUNTS)
def test_every_broker_has_exactly_one_shard(size: int, count: int) -> None:
    keys = brokers("prod", size)
    shards = assign(keys, count)
    assert len(shards) == count
    flat = [k for shard in shards for k in shard]
    assert sorted(flat) == sorted(keys)  # covered, none twice
    # Each process decides alone, from its own Shard: the same partition of the keys.
    for index in range(count):
        mine = [k for k in keys if Shard(index, count).owns(k)]
        assert mine == shards[index]


@pytest.mark.parametrize("count", [2, 3, 4, 7, 16])
def test_a_large_cluster_is_spread_evenly(count: int) -> None:
    shards = assign(brokers("prod", 2000), count)
    mean = 2000 / count
    # Binomial spread: within 20 % of the mean at these sizes (the hash is fixed, so this is deterministic).
    assert all(abs(len(s) - mean) <= 0.2 * mean for s in shards), [len(s) for s in shards]


@dataclass(frozen=True)
class Growth:
    before: int
    after: int


@pytest.mark.parametrize(
    "growth",
    [
        pytest.param(Growth(1, 2), id="1-to-2"),
        pytest.param(Growth(2, 3), id="2-to-3"),
        pytest.param(Growth(3, 4), id="3-to-4"),
        pytest.param(Growth(7, 8), id="7-to-8"),
        pytest.param(Growth(15, 16), id="15-to-16"),
    ],
)
def test_adding_a_shard_moves_only_what_the_new_shard_takes(growth: Growth) -> None:
    keys = brokers("prod", 2000)
    moved = [k for k in keys if owner(k, growth.before) != owner(k, growth.after)]
    # Every move goes to the new shard (and removing it again moves exactly these back).
    assert {owner(k, growth.after) for k in moved} <= {growth.after - 1}
    expected = len(keys) / growth.after
    assert abs(len(moved) - expected) <= 0.25 * expected, (len(moved), expected)


def test_brokers_coming_and_going_move_no_other_broker() -> None:
    count = 5
    before = {k: owner(k, count) for k in brokers("prod", 40)}
    grown = brokers("prod", 60)  # 20 new brokers
    shrunk = [k for i, k in enumerate(brokers("prod", 40)) if i % 3]  # a third decommissioned
    for keys in (grown, shrunk):
        after = {k: owner(k, count) for k in keys}
        assert all(after[k] == before[k] for k in keys if k in before)


def test_owners_do_not_depend_on_the_process() -> None:
    """Pinned owners: a change of hash would reshuffle a running fleet on upgrade, and every shard must agree."""
    assert weight("dev/1", 0) == 16521475557558692696
    assert [owner(broker_key("dev", b), 2) for b in (1, 2, 3)] == [0, 0, 1]
    assert owner(cluster_state_key("dev"), 2) == 1
    assert [owner(broker_key("prod", b), 4) for b in range(1, 9)] == [1, 1, 2, 0, 0, 0, 0, 2]


def test_the_same_broker_id_in_two_clusters_is_two_keys() -> None:
    assert broker_key("a", 1) != broker_key("b", 1)
    assert cluster_state_key("a") != broker_key("a", 1)
    assert client_key("a") != cluster_state_key("a")
    owners = {owner(broker_key(f"c{i}", 1), 4) for i in range(40)}
    assert owners == {0, 1, 2, 3}  # broker 1 of forty clusters lands on every shard


@pytest.mark.parametrize("count", COUNTS)
def test_cluster_state_has_one_owner_and_many_clusters_spread(count: int) -> None:
    clusters = [f"cluster-{i}" for i in range(60)]
    for cluster in clusters:
        assert sum(Shard(i, count).owns_cluster_state(cluster) for i in range(count)) == 1
    busy = {owner(cluster_state_key(c), count) for c in clusters}
    assert busy == set(range(count))  # no shard reads every cluster's metadata


def test_one_shard_owns_everything() -> None:
    whole = Shard(0, 1)
    assert whole.is_whole
    assert whole.owns_broker("prod", 7) and whole.owns_cluster_state("prod") and whole.owns_client("mm2")


@pytest.mark.parametrize(("index", "count"), [(2, 2), (-1, 2), (0, 0)])
def test_a_shard_outside_its_count_is_refused(index: int, count: int) -> None:
    with pytest.raises(ValueError, match="shard"):
        Shard(index, count)


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        pytest.param(
            {"index": 2, "count": 2},
            "collectors.shard.index: 2 is not a shard of 2: shards are numbered 0 to 1",
            id="index-not-below-count",
        ),
        pytest.param(
            {"index": -1, "count": 2},
            "collectors.shard.index: Input should be greater than or equal to 0 (got -1)",
            id="negative-index",
        ),
        pytest.param(
            {"index": 0, "count": 0},
            "collectors.shard.count: Input should be greater than or equal to 1 (got 0)",
            id="zero-count",
        ),
        pytest.param({"count": 3}, "collectors.shard.index: required key is missing", id="index-missing"),
        pytest.param({"index": 0}, "collectors.shard.count: required key is missing", id="count-missing"),
        pytest.param({"index": 0, "count": 2, "of": 2}, "collectors.shard: unknown key 'of'", id="unknown-key"),
    ],
)
def test_bad_shard_config_names_the_key(shard: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(yaml.safe_dump({"collectors": {"shard": shard}}), "pulse.yaml", {})
    assert f"pulse.yaml: {message}" in str(caught.value)


def test_shard_config_default_and_from_the_environment() -> None:
    assert parse_config("{}", "pulse.yaml", {}).collectors.shard.count == 1
    text = "collectors:\n  shard:\n    index: ${SHARD_INDEX}\n    count: 3\n"
    shard = parse_config(text, "pulse.yaml", {"SHARD_INDEX": "2"}).collectors.shard
    assert (shard.index, shard.count) == (2, 3)


def test_shard_plans_of_a_fleet_split_it_without_overlap() -> None:
    fleet = {f"c{i}": list(range(1, 31)) for i in range(8)} | {"admin-only": []}
    clients = [f"mm2-{i}" for i in range(10)]
    plans = [plan_shard(Shard(i, 3), fleet, clients) for i in range(3)]
    brokers = [pair for plan in plans for pair in plan.brokers]
    assert sorted(brokers) == sorted((c, b) for c, ids in fleet.items() for b in ids)
    states = [c for plan in plans for c in plan.cluster_states]
    assert sorted(states) == sorted(fleet)  # a cluster without JMX brokers still has one state reader
    assert sorted(n for plan in plans for n in plan.clients) == sorted(clients)
    assert plan_shard(Shard(0, 1), fleet, clients).brokers == tuple(brokers_in_order(fleet))


def brokers_in_order(fleet: dict[str, list[int]]) -> list[tuple[str, int]]:
    return [(c, b) for c, ids in fleet.items() for b in ids]


def test_shard_families_say_which_shard_and_what_it_owns() -> None:
    plan = plan_shard(Shard(0, 2), {"dev": [1, 2, 3]}, ["mm2"])
    registry = CollectorRegistry()
    registry.register(ShardCollector(plan))
    samples = {
        f.name: [(s.labels, s.value) for s in f.samples]
        for f in text_string_to_metric_families(generate_latest(registry).decode())
    }
    assert samples["kafka_pulse_collectors_shard_info"] == [({"shard": "0", "shard_count": "2"}, 1.0)]
    assert samples["kafka_pulse_collectors_shard_broker"] == [
        ({"cluster": "dev", "broker": "1", "shard": "0"}, 1.0),
        ({"cluster": "dev", "broker": "2", "shard": "0"}, 1.0),
    ]
    assert samples["kafka_pulse_collectors_shard_cluster_state"] == []  # shard 1 reads dev's state
    assert samples["kafka_pulse_collectors_shard_client_target"] == []  # and mm2's JMX
    other = plan_shard(Shard(1, 2), {"dev": [1, 2, 3]}, ["mm2"])
    assert (other.brokers, other.cluster_states, other.clients) == ((("dev", 3),), ("dev",), ("mm2",))
