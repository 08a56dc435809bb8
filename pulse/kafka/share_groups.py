"""Share groups (KIP-932): each group's state and members (ShareGroupDescribe, API key 77) and each partition's start
offset and lag as the broker computes it (DescribeShareGroupOffsets, API key 90; lag from v1, KIP-1226).

Neither librdkafka 2.16's admin client nor kafka-python 3.0's has these calls, so the requests are encoded with
kafka-python's protocol classes over wire schemas of our own (the `*.json` files beside this module) and sent on a
`KafkaAdminClient`'s connections to each group's coordinator (docs/kafka-clients.md). Missing lag stays None, never
0: a v0 broker, a partition whose lag the broker does not know (-1), or a partition without a start offset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulse.kafka.admin_client import KeptAdminClient, by_coordinator, close_now, kafka_python_warnings

MAX_GROUPS = 1000
"""Share groups one read describes at most (the rest are named in the read's reason)."""
MAX_PARTITIONS = 10_000
"""Partitions of one group kept at most: the answer comes from the broker, so it is bounded."""
MAX_NAME_CHARS = 249
"""Longest group or topic name kept (Kafka's own topic-name limit); longer ones are cut."""


@dataclass(frozen=True)
class SharePartition:
    """One partition a share group reads: where its share-partition starts and how many records wait."""

    topic: str
    partition: int
    start_offset: int | None
    """The share-partition start offset (SPSO); None when the broker has none (never initialised, or -1)."""
    lag: int | None
    """Records not yet delivered-and-completed, as the broker computes it (KIP-1226); None when it does not say."""


@dataclass(frozen=True)
class ShareMember:
    """One member of a share group."""

    member_id: str
    client_id: str
    client_host: str
    partitions: int
    """Partitions assigned to it."""


@dataclass(frozen=True)
class ShareGroup:
    """A share group as its coordinator describes it."""

    group: str
    state: str
    """The coordinator's state name (Empty, Stable, Dead, ...); "Unknown" when the describe failed."""
    members: tuple[ShareMember, ...] = ()
    partitions: tuple[SharePartition, ...] = ()
    error: str = ""
    """Why the group's describe or offsets could not be read; empty when both were."""


@dataclass(frozen=True)
class ShareGroupsRead:
    """One read of a cluster's share groups."""

    groups: tuple[ShareGroup, ...] = ()
    reason: str = ""
    """Why the read is incomplete (not supported, failed, past a bound); empty when every group was read."""


def _name(value: Any) -> str:
    return str(value)[:MAX_NAME_CHARS] if value is not None else ""


def _offset(value: Any) -> int | None:
    number = int(value) if value is not None else -1
    return number if number >= 0 else None


def parse_describe(answer: Mapping[str, Any]) -> dict[str, tuple[str, tuple[ShareMember, ...], str]]:
    """A ShareGroupDescribe answer (the response's `to_dict()`) as group -> (state, members, error) (pure)."""
    out: dict[str, tuple[str, tuple[ShareMember, ...], str]] = {}
    for group in answer.get("groups") or ():
        name = _name(group.get("group_id"))
        if group.get("error_code"):
            out[name] = ("Unknown", (), f"describe error {group['error_code']}: {_name(group.get('error_message'))}")
            continue
        members = []
        for m in group.get("members") or ():
            assigned = (m.get("assignment") or {}).get("topic_partitions") or ()
            count = sum(len(t.get("partitions") or ()) for t in assigned)
            members.append(
                ShareMember(_name(m.get("member_id")), _name(m.get("client_id")), _name(m.get("client_host")), count)
            )
        out[name] = (_name(group.get("group_state")), tuple(members), "")
    return out


def parse_offsets(answer: Mapping[str, Any]) -> dict[str, tuple[tuple[SharePartition, ...], str]]:
    """A DescribeShareGroupOffsets answer as group -> (partitions sorted, error) (pure). A partition with an error
    is left out (unknown), and its error is the group's."""
    out: dict[str, tuple[tuple[SharePartition, ...], str]] = {}
    for group in answer.get("groups") or ():
        name = _name(group.get("group_id"))
        if group.get("error_code"):
            out[name] = ((), f"offsets error {group['error_code']}: {_name(group.get('error_message'))}")
            continue
        partitions: list[SharePartition] = []
        error = ""
        for topic in group.get("topics") or ():
            for p in topic.get("partitions") or ():
                if p.get("error_code"):
                    error = f"offsets error {p['error_code']} on {_name(topic.get('topic_name'))}"
                    continue
                start = _offset(p.get("start_offset"))
                lag = _offset(p.get("lag")) if start is not None else None
                partitions.append(SharePartition(_name(topic.get("topic_name")), int(p["partition_index"]), start, lag))
        partitions.sort(key=lambda s: (s.topic, s.partition))
        if len(partitions) > MAX_PARTITIONS:
            partitions, error = partitions[:MAX_PARTITIONS], f"past the {MAX_PARTITIONS}-partition bound"
        out[name] = (tuple(partitions), error)
    return out


def merge(
    names: Sequence[str],
    described: Mapping[str, tuple[str, tuple[ShareMember, ...], str]],
    offsets: Mapping[str, tuple[tuple[SharePartition, ...], str]],
) -> tuple[ShareGroup, ...]:
    """One `ShareGroup` per name, from both answers (pure); a group missing from an answer says so."""
    out = []
    for name in names:
        state, members, described_error = described.get(name, ("Unknown", (), "not described"))
        partitions, offsets_error = offsets.get(name, ((), "no offsets answer"))
        error = "; ".join(e for e in (described_error, offsets_error) if e)
        out.append(ShareGroup(name, state, members, partitions, error))
    return tuple(out)


@dataclass
class _Messages:
    """The four protocol classes, built once kafka-python is imported (their schemas load with it)."""

    offsets_request: Any
    describe_request: Any
    classes: list[Any] = field(default_factory=list)


_MESSAGES: _Messages | None = None


def _messages() -> _Messages:
    global _MESSAGES
    if _MESSAGES is None:
        with kafka_python_warnings():
            _MESSAGES = _define_messages()
    return _MESSAGES


def _define_messages() -> _Messages:
    from kafka.protocol.api_message import ApiMessage

    package = __package__ or "pulse.kafka"

    class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=package):  # type: ignore[misc, call-arg]
        pass

    class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=package):  # type: ignore[misc, call-arg]
        pass

    class ShareGroupDescribeRequest(ApiMessage, load_json=package):  # type: ignore[misc, call-arg]
        pass

    class ShareGroupDescribeResponse(ApiMessage, load_json=package):  # type: ignore[misc, call-arg]
        pass

    return _Messages(
        DescribeShareGroupOffsetsRequest,
        ShareGroupDescribeRequest,
        [DescribeShareGroupOffsetsResponse, ShareGroupDescribeResponse],
    )


class ShareGroupReader:
    """Share groups read with one kafka-python admin client kept across reads (`KeptAdminClient` says why).
    Opening connects to nothing; the first `read` does."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        """`settings`: pulse.profile.kafka_python_config, whose request timeout bounds each exchange."""
        self.client = KeptAdminClient(settings)

    def read(self, groups: Sequence[str] | None = None) -> ShareGroupsRead:
        """Every share group's state, members and offsets (or only `groups`). Never raises: a failure is the
        read's `reason`."""
        with kafka_python_warnings():
            from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
            from kafka.errors import KafkaError as KafkaPythonError

            messages = _messages()
            try:
                client = self.client.get()
            except KafkaPythonError as exc:
                return ShareGroupsRead(reason=f"share groups: cannot connect: {exc}")
            try:
                if groups is None:
                    listed = client.list_groups(types_filter=["share"])
                    groups = sorted({_name(g.get("group_id")) for g in listed})
                asked, skipped = list(groups[:MAX_GROUPS]), len(groups) - MAX_GROUPS
                if not asked:
                    return ShareGroupsRead()
                described, offsets = client._manager.run(_ask, client, messages, asked)
            except (IncompatibleBrokerVersion, UnsupportedVersionError):
                return ShareGroupsRead(reason="share groups not supported (Kafka before 4.1, or share.version=0)")
            except KafkaPythonError as exc:
                return ShareGroupsRead(reason=f"share groups: {type(exc).__name__}: {exc}")
        reason = f"{skipped} share groups past the {MAX_GROUPS}-group bound" if skipped > 0 else ""
        return ShareGroupsRead(merge(asked, described, offsets), reason)

    def close(self) -> None:
        self.client.close()


def read_share_groups(
    settings: Mapping[str, Any],
    groups: Sequence[str] | None = None,
    close: Callable[[Callable[[], None]], None] | None = None,
) -> ShareGroupsRead:
    """One read with a client of its own (`ShareGroupReader`), closed after it; `close` runs that close (a caller
    may close on another thread). Never raises."""
    reader = ShareGroupReader(settings)
    try:
        return reader.read(groups)
    finally:
        (close or close_now)(reader.close)


async def _ask(client: Any, messages: _Messages, groups: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both requests to each group's coordinator (FindCoordinator GROUP: share groups live on the group
    coordinator), one of each per coordinator, all sent before any answer is awaited: a coordinator's offsets
    answer takes seconds with a hundred groups (docs/benchmarks.md), so asked one after another the read's wall
    was the sum over the coordinators. Runs on the client's network loop."""
    request_group = messages.offsets_request.DescribeShareGroupOffsetsRequestGroup
    sent = [
        (
            client._manager.send(
                messages.describe_request(group_ids=names, include_authorized_operations=False), node_id=node
            ),
            client._manager.send(
                messages.offsets_request(groups=[request_group(group_id=g, topics=None) for g in names]), node_id=node
            ),
        )
        for node, names in await by_coordinator(client, groups)
    ]
    described: dict[str, Any] = {}
    offsets: dict[str, Any] = {}
    for describing, offsetting in sent:
        described |= parse_describe((await describing).to_dict())
        offsets |= parse_offsets((await offsetting).to_dict())
    return described, offsets
