"""Streams groups (KIP-1071, `group.protocol=streams`): each group's state, epochs, topology and members through
StreamsGroupDescribe (API key 89, v0), judged for what an operator must see: NOT_READY (internal or source topics
missing, so nothing runs) and members still on an older topology epoch than the group's.

Their input-topic lag is not read here: a streams group commits its input offsets as any consumer group does (in
`__consumer_offsets`, under its application id), so the lag evaluator judges them with the consumer groups' rules.
Neither librdkafka 2.16 nor kafka-python 3.0 has this call, so the request is encoded with kafka-python's protocol
classes over wire schemas of our own (`StreamsGroupDescribe*.json` beside this module), as share groups are
(docs/kafka-clients.md).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulse.kafka.admin_client import KeptAdminClient, by_coordinator, kafka_python_warnings

MAX_GROUPS = 1000
"""Streams groups one read describes at most (the rest are named in the read's reason)."""
MAX_MEMBERS = 10_000
"""Members of one group kept at most: the answer comes from the broker, so it is bounded."""
MAX_NAME_CHARS = 249
"""Longest group, topic or member name kept (Kafka's own topic-name limit); longer ones are cut."""


class StreamsStatus(enum.IntEnum):
    """A streams group's verdict, worst last."""

    UNKNOWN = -1
    """Not described (an error, or no answer)."""
    OK = 0
    STALE_TOPOLOGY = 1
    """Some member runs an older topology epoch than the group's: it was not restarted with the new topology."""
    NOT_READY = 2
    """The coordinator holds the group NOT_READY: topics its topology needs are missing, so no task runs."""


@dataclass(frozen=True)
class StreamsMember:
    """One member of a streams group (one Kafka Streams client)."""

    member_id: str
    client_id: str
    client_host: str
    process_id: str
    member_epoch: int
    topology_epoch: int
    """The topology epoch this member runs."""
    active_tasks: int
    """Active tasks assigned to it (sub-topology partitions)."""
    is_classic: bool = False
    """Still on the classic protocol (not yet upgraded)."""


@dataclass(frozen=True)
class StreamsGroup:
    """A streams group as its coordinator describes it."""

    group: str
    state: str
    """The coordinator's state name (NotReady, Assigning, Reconciling, Stable, Empty, Dead); "Unknown" when the
    describe failed."""
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    """The target assignment's epoch."""
    topology_epoch: int | None = None
    """The epoch of the group's initialised topology; None before one is set (or on an error)."""
    members: tuple[StreamsMember, ...] = ()
    source_topics: tuple[str, ...] = ()
    """Topics its sub-topologies read from (input and repartition topics); empty while the topology is not set."""
    error: str = ""
    """Why the group could not be described; empty when it was."""

    @property
    def not_ready(self) -> bool:
        return self.state.replace("_", "").lower() == "notready"

    @property
    def stale_members(self) -> tuple[StreamsMember, ...]:
        """Members on an older topology epoch than the group's (none while the group's is unknown)."""
        epoch = self.topology_epoch
        return tuple(m for m in self.members if epoch is not None and m.topology_epoch < epoch)

    @property
    def status(self) -> StreamsStatus:
        if self.error:
            return StreamsStatus.UNKNOWN
        if self.not_ready:
            return StreamsStatus.NOT_READY
        return StreamsStatus.STALE_TOPOLOGY if self.stale_members else StreamsStatus.OK

    def reason(self) -> str:
        """Why the group is not OK, in one line; empty when it is."""
        status = self.status
        if status is StreamsStatus.UNKNOWN:
            return f"{self.group}: {self.error}"
        if status is StreamsStatus.NOT_READY:
            return f"{self.group}: NOT_READY, topics its topology needs are missing (no task runs)"
        if status is StreamsStatus.STALE_TOPOLOGY:
            stale = self.stale_members
            names = ", ".join(m.member_id for m in stale[:5]) + (", ..." if len(stale) > 5 else "")
            return f"{self.group}: {len(stale)} member(s) on a topology epoch below {self.topology_epoch}: {names}"
        return ""


@dataclass(frozen=True)
class StreamsGroupsRead:
    """One read of a cluster's streams groups."""

    groups: tuple[StreamsGroup, ...] = ()
    reason: str = ""
    """Why the read is incomplete (not supported, failed, past a bound); empty when every group was read."""


def _name(value: Any) -> str:
    return str(value)[:MAX_NAME_CHARS] if value is not None else ""


def _tasks(assignment: Mapping[str, Any] | None) -> int:
    active = (assignment or {}).get("active_tasks") or ()
    return sum(len(t.get("partitions") or ()) for t in active)


def parse_describe(answer: Mapping[str, Any]) -> dict[str, StreamsGroup]:
    """A StreamsGroupDescribe answer (the response's `to_dict()`) as group -> `StreamsGroup` (pure)."""
    out: dict[str, StreamsGroup] = {}
    for group in answer.get("groups") or ():
        name = _name(group.get("group_id"))
        if group.get("error_code"):
            error = f"describe error {group['error_code']}: {_name(group.get('error_message'))}"
            out[name] = StreamsGroup(name, "Unknown", error=error)
            continue
        topology = group.get("topology") or {}
        sources: set[str] = set()
        for sub in topology.get("subtopologies") or ():
            sources.update(_name(t) for t in sub.get("source_topics") or ())
            sources.update(_name(t.get("name")) for t in sub.get("repartition_source_topics") or ())
        members = [
            StreamsMember(
                _name(m.get("member_id")),
                _name(m.get("client_id")),
                _name(m.get("client_host")),
                _name(m.get("process_id")),
                int(m.get("member_epoch") or 0),
                int(m.get("topology_epoch") or 0),
                _tasks(m.get("assignment")),
                bool(m.get("is_classic")),
            )
            for m in (group.get("members") or ())[:MAX_MEMBERS]
        ]
        members.sort(key=lambda m: m.member_id)
        out[name] = StreamsGroup(
            name,
            _name(group.get("group_state")) or "Unknown",
            int(group.get("group_epoch") or 0),
            int(group.get("assignment_epoch") or 0),
            int(topology["epoch"]) if topology.get("epoch") is not None else None,
            tuple(members),
            tuple(sorted(sources)),
        )
    return out


def merge(names: Sequence[str], described: Mapping[str, StreamsGroup]) -> tuple[StreamsGroup, ...]:
    """One `StreamsGroup` per name (pure); a group missing from the answers says so."""
    return tuple(described.get(n, StreamsGroup(n, "Unknown", error="not described")) for n in names)


_DESCRIBE: tuple[Any, Any] | None = None
"""The request and response classes, built once kafka-python is imported (its schemas load with it)."""


def describe_messages() -> tuple[Any, Any]:
    """StreamsGroupDescribe's request and response classes (kafka-python `ApiMessage`s over our schemas)."""
    global _DESCRIBE
    if _DESCRIBE is None:
        with kafka_python_warnings():
            _DESCRIBE = _define_messages()
    return _DESCRIBE


def _define_messages() -> tuple[Any, Any]:
    from kafka.protocol.api_message import ApiMessage

    package = __package__ or "pulse.kafka"

    class StreamsGroupDescribeRequest(ApiMessage, load_json=package):  # type: ignore[misc, call-arg]
        pass

    class StreamsGroupDescribeResponse(ApiMessage, load_json=package):  # type: ignore[misc, call-arg]
        pass

    return StreamsGroupDescribeRequest, StreamsGroupDescribeResponse


class StreamsGroupReader:
    """Streams groups read with one kafka-python admin client kept across reads, closed once at stop
    (`KeptAdminClient` says why)."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        """`settings`: pulse.profile.kafka_python_config, whose request timeout bounds each exchange."""
        self.client = KeptAdminClient(settings)

    def read(self, groups: Sequence[str] | None = None) -> StreamsGroupsRead:
        """Every streams group described (or only `groups`). Never raises: a failure is the read's `reason`."""
        with kafka_python_warnings():
            from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
            from kafka.errors import KafkaError as KafkaPythonError

            request, _ = describe_messages()
            try:
                client = self.client.get()
            except KafkaPythonError as exc:
                return StreamsGroupsRead(reason=f"streams groups: cannot connect: {exc}")
            try:
                if groups is None:
                    # Every group, filtered here: kafka-python's GroupType has no "streams" for types_filter.
                    listed = client.list_groups()
                    groups = sorted({_name(g.get("group_id")) for g in listed if g.get("group_type") == "streams"})
                asked, skipped = list(groups[:MAX_GROUPS]), len(groups) - MAX_GROUPS
                if not asked:
                    return StreamsGroupsRead()
                described = client._manager.run(_ask, client, request, asked)
            except (IncompatibleBrokerVersion, UnsupportedVersionError):
                return StreamsGroupsRead(reason="streams groups not supported (Kafka before 4.1, or streams.version=0)")
            except KafkaPythonError as exc:
                return StreamsGroupsRead(reason=f"streams groups: {type(exc).__name__}: {exc}")
        reason = f"{skipped} streams groups past the {MAX_GROUPS}-group bound" if skipped > 0 else ""
        return StreamsGroupsRead(merge(asked, described), reason)

    def close(self) -> None:
        self.client.close()


async def _ask(client: Any, request: Any, groups: list[str]) -> dict[str, StreamsGroup]:
    """One StreamsGroupDescribe per coordinator (FindCoordinator GROUP: streams groups live on the group
    coordinator), all sent before any answer is awaited, so the read waits for the slowest coordinator, not their
    sum; runs on the client's network loop."""
    sent = [
        client._manager.send(request(group_ids=names, include_authorized_operations=False), node_id=node)
        for node, names in await by_coordinator(client, groups)
    ]
    described: dict[str, StreamsGroup] = {}
    for answer in sent:
        described |= parse_describe((await answer).to_dict())
    return described
