"""Who is in a group, as its metadata says: partition owners, member counts and share groups. They change with group
metadata records (classic, KIP-848 consumer protocol, KIP-932 share groups) and DescribeConsumerGroups, for reasons
of their own, not with commits; `OffsetStore` keeps one `GroupMembership` beside its windows and forgets a group's
entries when it deletes the group.
"""

from __future__ import annotations

from collections.abc import Callable

Owners = dict[tuple[str, int], tuple[str, str]]
"""(topic, partition) -> (owner host, client id)."""


class GroupMembership:
    """Owners per stored group id (kept aside by name until the group's first commit), member counts and share
    groups per cluster; a group the store's filter rejects is never recorded."""

    def __init__(self, accepts_group: Callable[[str], bool]) -> None:
        self._accepts_group = accepts_group
        self._owners: dict[int, Owners] = {}
        """Group id -> owners, from group metadata; absent when unknown."""
        self._early_owners: dict[tuple[str, str], Owners] = {}
        """Owners of groups with no stored commit yet (members join before they commit); taken over by the group."""
        self._members: dict[tuple[str, str], int] = {}
        """(cluster, group) -> members, from group metadata or DescribeConsumerGroups; absent when unknown."""
        self._share_groups: dict[str, set[str]] = {}
        """Cluster -> share groups (KIP-932): listed, never judged."""

    def set_owner(
        self, cluster: str, group: str, gid: int | None, topic: str, partition: int, owner: str, client_id: str
    ) -> None:
        """Record who consumes a partition of the group stored as `gid`, or kept aside when it is not stored yet."""
        if gid is not None:
            self._owners.setdefault(gid, {})[(topic, partition)] = (owner, client_id)
        elif self._accepts_group(group):
            self._early_owners.setdefault((cluster, group), {})[(topic, partition)] = (owner, client_id)

    def clear_owners(self, cluster: str, group: str, gid: int | None) -> None:
        self._early_owners.pop((cluster, group), None)
        if gid is not None:
            self._owners.pop(gid, None)

    def owners(self, gid: int) -> Owners:
        """Owners of a group id; empty when unknown."""
        return self._owners.get(gid, {})

    def adopt(self, cluster: str, group: str, gid: int) -> None:
        """The group was just stored as `gid`: it takes over the owners kept aside for it."""
        early = self._early_owners.pop((cluster, group), None)
        if early:
            self._owners[gid] = early

    def forget(self, cluster: str, group: str, gid: int | None) -> None:
        """The group was deleted: its member count and owners go with it (its id may be handed out again)."""
        self._members.pop((cluster, group), None)
        self._early_owners.pop((cluster, group), None)
        if gid is not None:
            self._owners.pop(gid, None)

    def set_members(self, cluster: str, group: str, count: int | None) -> None:
        """The group's member count as its metadata says now (classic or consumer protocol); None forgets it."""
        if count is None:
            self._members.pop((cluster, group), None)
        elif self._accepts_group(group):
            self._members[(cluster, group)] = count

    def members(self, cluster: str, group: str) -> int | None:
        """The group's member count; None when no metadata was seen."""
        return self._members.get((cluster, group))

    def member_counts(self, cluster: str) -> list[tuple[str, int]]:
        """(group, members) of every group of the cluster whose metadata was seen, in name order."""
        return sorted((g, n) for (c, g), n in self._members.items() if c == cluster)

    def set_share_group(self, cluster: str, group: str, present: bool) -> None:
        """A share group appeared (or was deleted): listed as not judged, it commits no offsets to judge."""
        groups = self._share_groups.setdefault(cluster, set())
        if present and self._accepts_group(group):
            groups.add(group)
        else:
            groups.discard(group)

    def share_groups(self, cluster: str) -> list[str]:
        return sorted(self._share_groups.get(cluster, ()))
