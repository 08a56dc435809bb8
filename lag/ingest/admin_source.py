"""Admin API ingestion, for clusters whose `__consumer_offsets` cannot be read: every `group_offsets_refresh_s`,
list the groups, describe them (state, members, assignments) and fetch each group's committed offsets
(OffsetFetch), then store a commit per partition with the fetch time as its commit time.

What this mode cannot see, and how it compensates (docs/architecture.md says the same): there are no commit events
and no commit timestamps, only the committed offset at each poll. So a poll stores a sample when the offset moved
(someone committed) or when the group has live members (its consumers are there, whatever they commit); an empty
group whose offset did not move stores nothing, so its window ages as a silent group's does. With those samples:
a caught-up group is OK, a stalled group (members present, offset stuck, lag growing) is STALL, a stopped group
(members gone) is STOP, as with `__consumer_offsets`. It differs where the member list and the commits disagree:
a consumer that hangs while still a member is STALL here but STOP there, and a group that commits by assign()
only (no members) with an unchanged offset is STOP here where it would be STALL there; both are ERR for the
group. Commits between two polls are not seen, so min-distance is effectively the poll interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException

from lag.ingest.admin_clients import RENEW_AFTER_FAILURES, AdminClients
from lag.store.access import LagWriter
from lag.store.freshness import SourceHealth
from pulse.admin_requests import GROUP_REQUEST_TIMEOUT_S, await_result
from pulse.kafka.group_offsets import SKIPPED, GroupOffsets, GroupOffsetsReader, OffsetsUnread

_LOG = logging.getLogger(__name__)
GROUP_OFFSETS_FEED = "group-offsets"
"""The SourceHealth feed this reader keeps fresh; the cluster is unknown while it is stale."""
_REQUEST_TIMEOUT_S = 5.0
"""The group listing's request timeout (ListGroups goes to every broker, not to a coordinator)."""
WAIT_S = 10.0
"""How long a round waits for one group's answers (its description, its offsets' request timeout); one that does not
come in time fails the round."""
_BATCH = 200
"""DescribeConsumerGroups requests in flight at once."""

TopicPartition = tuple[str, int]
_SKIPPED_GROUP_ERRORS = SKIPPED
"""Errors about one group that skip it for the round, its description's or its offsets' (GroupOffsets.skipped). Any
other error (timeouts, a coordinator that is down) fails the round, so the cluster turns unknown: a skipped live
group would otherwise look silent, i.e. stopped."""
_ACTIVE_STATES = frozenset(
    {ConsumerGroupState.STABLE, ConsumerGroupState.PREPARING_REBALANCING, ConsumerGroupState.COMPLETING_REBALANCING}
)


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """One group as one poll saw it."""

    group: str
    active: bool
    """The group has members (stable or rebalancing), i.e. its consumers are alive."""
    offsets: Mapping[TopicPartition, int]
    """Committed offsets; partitions without a committed offset are absent."""
    owners: Mapping[TopicPartition, tuple[str, str]]
    """(host, client id) of the member each partition is assigned to."""
    members: int = 0
    """Members in the group (classic or consumer protocol: DescribeConsumerGroups answers both)."""


def should_store(previous_offset: int | None, offset: int, group_active: bool) -> bool:
    """Whether a poll's committed offset becomes a stored commit (sampled at fetch time).

    First sight and every move are commits. An unchanged offset is a commit only while the group has members:
    live consumers re-committing (or failing to progress) keep their window fresh, so STALL can be seen; a group
    with no members committed nothing, so its window must age and STOP can be seen.
    """
    return previous_offset is None or offset != previous_offset or group_active


def commits_to_store(
    previous: Mapping[TopicPartition, int] | None, snapshot: GroupSnapshot
) -> list[tuple[TopicPartition, int]]:
    """The (partition, offset) pairs of one group's poll that `should_store` keeps, in partition order."""
    prev = previous or {}
    return [
        (tp, offset)
        for tp, offset in sorted(snapshot.offsets.items())
        if should_store(prev.get(tp), offset, snapshot.active)
    ]


class AdminOffsetsReader:
    """Polls one cluster's committed offsets through the Admin API and stores them as commits."""

    def __init__(
        self,
        cluster: str,
        clients: AdminClients,
        offsets: GroupOffsetsReader,
        service: LagWriter,
        health: SourceHealth,
        streams_groups: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        """`streams_groups`: the cluster's streams groups with their member counts (lag/store/streams_board.py), read
        each round: confluent-kafka's listing leaves them out, yet their commits are fetched as any group's."""
        self.cluster = cluster
        self.streams_groups = streams_groups
        self.clients = clients
        """This reader's own admin client (never the HWM thread's) for the listing and descriptions, renewed by its
        loop after failed polls."""
        self.offsets = offsets
        """The committed offsets' reader (kafka-python: pulse/kafka/group_offsets.py says why), renewed with it."""
        self.service = service
        self.health = health
        self._last: dict[str, dict[TopicPartition, int]] = {}
        """Per group, the offsets of the previous successful poll."""
        self._failed = 0
        """Loop rounds failed in a row."""
        health.expect(cluster, GROUP_OFFSETS_FEED)

    def poll(self) -> bool:
        """One round; False (and the cluster's feed marked failing) when any request failed."""
        try:
            listed, snapshots = self.read_snapshots()
        except (KafkaException, Exception) as exc:  # any failure: commits unknown now, so the cluster is unknown
            self.health.mark_error(self.cluster, f"{type(exc).__name__}: {exc}", GROUP_OFFSETS_FEED)
            return False
        self.apply(listed, snapshots, self.service.clock_ms())
        self.health.mark_ok(self.cluster, GROUP_OFFSETS_FEED)
        return True

    def poll_renewing(self) -> bool:
        """One loop round (`poll`); its admin client is renewed after repeated failures (admin_clients.py says why
        a fresh client helps)."""
        ok = self.poll()
        self._failed = 0 if ok else self._failed + 1
        if self._failed and self._failed % RENEW_AFTER_FAILURES == 0:
            _LOG.info("lag source %s: %d offset polls failed; renewing their admin client", self.cluster, self._failed)
            self.clients.renew()
            self.offsets.close()  # the next read opens a new client
        return ok

    def close(self) -> None:
        """Closes the offsets' client; called once the loop has stopped."""
        self.offsets.close()

    def read_snapshots(self) -> tuple[set[str], list[GroupSnapshot]]:
        """The groups Kafka lists (those the filters accept) and a snapshot of each that could be read."""
        admin = self.clients.client
        listed = admin.list_consumer_groups(request_timeout=_REQUEST_TIMEOUT_S)
        listing = await_result(self.clients.track([listed])[0], _REQUEST_TIMEOUT_S + 5)
        streams = dict(self.streams_groups()) if self.streams_groups is not None else {}
        with self.service.locked() as store:
            groups = sorted(g.group_id for g in listing.valid if store.admits(self.cluster, g.group_id))
            streams = {g: n for g, n in streams.items() if g not in groups and store.admits(self.cluster, g)}
        snapshots: list[GroupSnapshot] = []
        for i in range(0, len(groups), _BATCH):
            batch = groups[i : i + _BATCH]
            # Coordinator requests keep librdkafka's long timeout (pulse/admin_requests.py); `_snapshot` bounds
            # our wait. The offsets are read while the descriptions are on their way.
            described = admin.describe_consumer_groups(batch, request_timeout=GROUP_REQUEST_TIMEOUT_S)
            self.clients.track(list(described.values()))
            offsets = self.offsets.read(dict.fromkeys(batch))
            for group in batch:
                snap = _snapshot(group, described[group], offsets[group])
                if snap is not None:
                    snapshots.append(snap)
        # Streams groups' offsets as any group's; alive while they have members, as StreamsGroupDescribe counted
        # them (DescribeConsumerGroups answers them as dead classic groups).
        streamed = self.offsets.read(dict.fromkeys(streams))
        for group, members in sorted(streams.items()):
            found = _committed(streamed[group])
            if found is not None:
                snapshots.append(GroupSnapshot(group, members > 0, found, {}, members))
        return set(groups) | set(streams), snapshots

    def apply(self, listed: set[str], snapshots: list[GroupSnapshot], now_ms: int) -> None:
        """Store the polled offsets; groups Kafka no longer lists are forgotten (Burrow's groups reaper)."""
        with self.service.locked() as store:
            for gone in set(self._last) - listed:
                store.delete_group(self.cluster, gone)
                del self._last[gone]
            for snap in snapshots:
                store.set_members(self.cluster, snap.group, snap.members)
                for (topic, partition), offset in commits_to_store(self._last.get(snap.group), snap):
                    store.add_commit(self.cluster, snap.group, topic, partition, offset, now_ms, now_ms)
                if snap.owners:
                    for (topic, partition), (host, client_id) in snap.owners.items():
                        store.set_owner(self.cluster, snap.group, topic, partition, host, client_id)
                elif not snap.active:
                    store.clear_owners(self.cluster, snap.group)
                self._last[snap.group] = dict(snap.offsets)


def _snapshot(group: str, described: Future[Any], offsets: GroupOffsets) -> GroupSnapshot | None:
    """The group's snapshot; None when the group was deleted between the listing and the fetch, or is not ours to
    read: it is skipped this round. Every other error raises."""
    try:
        description = await_result(described, WAIT_S)
    except KafkaException as exc:
        _skip(group, exc)
        return None
    found = _committed(offsets)
    if found is None:
        return None
    owners: dict[TopicPartition, tuple[str, str]] = {}
    for member in description.members or []:
        for tp in member.assignment.topic_partitions if member.assignment is not None else []:
            owners[(tp.topic, tp.partition)] = (member.host or "", member.client_id or "")
    members = len(description.members or [])
    # A consumer-protocol group reconciling an assignment may report a state this client has no name for
    # (UNKNOWN); its members say it is alive all the same.
    active = description.state in _ACTIVE_STATES or members > 0
    return GroupSnapshot(group, active, found, owners, members)


def _committed(offsets: GroupOffsets) -> dict[TopicPartition, int] | None:
    """The group's committed offsets; None when it is skipped this round (deleted, or not ours); OffsetsUnread for
    any other error."""
    if offsets.skipped:
        _LOG.info("group %s skipped this round: %s", offsets.group, offsets.error)
        return None
    if offsets.code:
        raise OffsetsUnread(f"group {offsets.group[:249]!r}: committed offsets not read: {offsets.error}")
    return dict(offsets.offsets)


def _skip(group: str, exc: KafkaException) -> None:
    """Logs a group skipped this round for an error in `_SKIPPED_GROUP_ERRORS`; any other error is raised."""
    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    if error is None or error.code() not in _SKIPPED_GROUP_ERRORS:
        raise exc
    _LOG.info("group %s skipped this round: %s", group, error.str())
