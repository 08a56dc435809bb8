"""Which `collect` process scrapes what, when `collectors.shard.count` processes share a fleet (pure, no I/O).

Rendezvous (highest-random-weight) hashing: every shard scores every key (a broker, a cluster's state, a client
target) with a stable hash of key and shard index, and the highest score owns the key. Each process computes the
same answer from the config alone, with no coordination: every key has exactly one owner, an owner depends only on
its own key (brokers coming and going move nobody else), and going from N to N + 1 shards moves only the keys the
new shard wins, about 1/(N + 1) of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


def broker_key(cluster: str, broker: int) -> str:
    """A broker's key: `cluster/broker-id` (cluster names cannot contain `/`, so keys never collide)."""
    return f"{cluster}/{broker}"


def cluster_state_key(cluster: str) -> str:
    """The key of a cluster's Admin API state (topics, partitions, URPs, controller): the bare cluster name."""
    return cluster


def client_key(name: str) -> str:
    """A client target's key (`collectors.clients[].name`); `:` is in no cluster name, so it is never a cluster's."""
    return f"client:{name}"


def weight(key: str, shard: int) -> int:
    """The score of `shard` for `key`: 64 bits of BLAKE2b, the same in every process and Python version (the
    built-in `hash()` of a str is salted per process, so two shards would disagree about every key)."""
    digest = hashlib.blake2b(f"{key}#{shard}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(key: str, count: int) -> int:
    """The shard (0 to `count` - 1) that owns `key`: the highest weight, the lower index on a tie."""
    if count < 1:
        raise ValueError(f"shard count must be at least 1, got {count}")
    best, best_weight = 0, -1
    for shard in range(count):
        w = weight(key, shard)
        if w > best_weight:  # strict: a tie keeps the lower index
            best, best_weight = shard, w
    return best


def assign(keys: Iterable[str], count: int) -> list[list[str]]:
    """`keys` split over `count` shards: entry i holds shard i's keys, in the order given."""
    shards: list[list[str]] = [[] for _ in range(count)]
    for key in keys:
        shards[owner(key, count)].append(key)
    return shards


@dataclass(frozen=True)
class Shard:
    """One process's place among the shards (`collectors.shard`), and the questions the service asks of it."""

    index: int
    count: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard index {self.index} is not in 0..{self.count - 1} (count {self.count})")

    @property
    def is_whole(self) -> bool:
        """True when one process does everything (count 1): nothing is left to another shard."""
        return self.count == 1

    def owns(self, key: str) -> bool:
        return self.is_whole or owner(key, self.count) == self.index

    def owns_broker(self, cluster: str, broker: int) -> bool:
        return self.owns(broker_key(cluster, broker))

    def owns_cluster_state(self, cluster: str) -> bool:
        """Cluster-wide series come from one shard only, chosen by the cluster's name: known from config alone,
        steady while the controller moves, and spread over the shards when there are many clusters."""
        return self.owns(cluster_state_key(cluster))

    def owns_client(self, name: str) -> bool:
        return self.owns(client_key(name))


@dataclass(frozen=True)
class ShardPlan:
    """What one shard scrapes, decided from the config alone before anything connects."""

    shard: Shard
    brokers: tuple[tuple[str, int], ...]
    """(cluster, broker id) of the configured JMX brokers this shard scrapes."""
    cluster_states: tuple[str, ...]
    """Clusters whose Admin API state (the `kafka_pulse_cluster_*` families) this shard reads and exports."""
    clients: tuple[str, ...]
    """Client targets (`collectors.clients[].name`) this shard scrapes."""


def plan_shard(shard: Shard, brokers: Mapping[str, Iterable[int]], clients: Iterable[str] = ()) -> ShardPlan:
    """`shard`'s part of a fleet: `brokers` maps each cluster (every configured one, with or without JMX brokers)
    to its broker ids."""
    return ShardPlan(
        shard=shard,
        brokers=tuple((c, b) for c, ids in brokers.items() for b in ids if shard.owns_broker(c, b)),
        cluster_states=tuple(c for c in brokers if shard.owns_cluster_state(c)),
        clients=tuple(name for name in clients if shard.owns_client(name)),
    )
