"""Consumer groups' committed offsets (OffsetFetch) through kafka-python, never librdkafka's Admin
ListConsumerGroupOffsets: librdkafka 2.16 dereferences a NULL group handle when a coordinator answers
NOT_COORDINATOR to it, and the whole process dies of SIGSEGV (confluentinc/librdkafka#5040; our CI hit it while a
group's coordinator moved). Here one OffsetFetch v8+ per coordinator carries up to `BATCH` groups (KIP-709), every
coordinator asked before any answer is awaited; a group whose coordinator moved is asked once more, of the broker
FindCoordinator names then. kafka-python is imported on use, never with this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulse.kafka.admin_client import KeptAdminClient, by_coordinator, kafka_python_warnings

BATCH = 200
"""Groups in one OffsetFetch request at most: one answer stays a few hundred KiB at 10 partitions a group."""
GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED = 69, 30
SKIPPED = frozenset({GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED})
"""Errors that say the group is not there to read (deleted since it was listed, or not ours): a caller skips it."""
COORDINATOR_MOVED = frozenset({14, 15, 16})
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: ask the new coordinator."""
UNANSWERED = -1
"""The code of a group whose request got no answer (a timeout, a closed connection, no coordinator found)."""

Partitions = Sequence[tuple[str, int]] | None
"""The partitions asked of a group; None asks for every partition it committed."""


class OffsetsUnread(RuntimeError):
    """Committed offsets a caller cannot do without were not read (an error that does not skip the group)."""


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """One group's committed offsets as its coordinator answered, or why it could not."""

    group: str
    offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    """(topic, partition) -> committed offset; partitions with no commit, or with an error, are absent."""
    code: int = 0
    """Kafka's error code for the group (0: read; `UNANSWERED`: no answer)."""
    error: str = ""
    """Kafka's name for the error, or the failed request's; empty when read."""

    @property
    def skipped(self) -> bool:
        return self.code in SKIPPED


def parse_answer(answer: Any, asked: Sequence[str]) -> dict[str, GroupOffsets]:
    """An OffsetFetch answer as kafka-python decodes it, any version, read by attribute (its `to_dict()` cost ten
    times this walk at 100,000 partitions). v8+ names each group; v2-v7 answer the one group `asked` at the top
    level. A group asked and not answered is `UNANSWERED`; one not asked is dropped (the answer is the broker's)."""
    wanted = set(asked)
    if answer.API_VERSION >= 8:
        rows = [(str(row.group_id), row.error_code, row.topics) for row in answer.groups or []]
    else:
        rows = [(asked[0], answer.error_code, answer.topics)] if asked else []
    found: dict[str, GroupOffsets] = {}
    for group, code, topics in rows:
        if group not in wanted:
            continue
        if code:
            found[group] = GroupOffsets(group, {}, code, error_name(code))
            continue
        offsets = {
            (str(topic.name), p.partition_index): p.committed_offset
            for topic in topics or []
            for p in topic.partitions or []
            if not p.error_code and p.committed_offset >= 0
        }
        found[group] = GroupOffsets(group, offsets)
    for group in asked:
        found.setdefault(group, GroupOffsets(group, {}, UNANSWERED, "no answer for the group"))
    return found


def error_name(code: int) -> str:
    """Kafka's name for an error code (kafka-python's table)."""
    with kafka_python_warnings():
        from kafka.errors import for_code

    return str(for_code(code).__name__)


class GroupOffsetsReader:
    """Committed offsets read with one kafka-python admin client kept across reads (`KeptAdminClient` says why);
    opening connects to nothing."""

    def __init__(self, settings: Mapping[str, Any], batch: int = BATCH) -> None:
        """`settings`: pulse.profile.kafka_python_config, whose request timeout bounds each exchange."""
        self.client = KeptAdminClient(settings)
        self.batch = batch

    def read(self, wanted: Mapping[str, Partitions]) -> dict[str, GroupOffsets]:
        """Each wanted group's offsets, or its error (never raised: a caller judges them). Raises kafka-python's
        KafkaError only when no broker can be reached to start."""
        if not wanted:
            return {}
        with kafka_python_warnings():
            client = self.client.get()
            return dict(client._manager.run(_fetch, client, dict(wanted), self.batch))

    def close(self) -> None:
        self.client.close()


async def _fetch(client: Any, wanted: dict[str, Partitions], batch: int) -> dict[str, GroupOffsets]:
    """One round to every coordinator, then one more for the groups whose coordinator moved. Runs on the client's
    network loop."""
    found = await _round(client, wanted, batch)
    moved = {g: wanted[g] for g, read in found.items() if read.code in COORDINATOR_MOVED}
    _forget(client, [g for g, read in found.items() if read.code in COORDINATOR_MOVED or read.code == UNANSWERED])
    if moved:
        found |= await _round(client, moved, batch)
        _forget(client, [g for g in moved if found[g].code in COORDINATOR_MOVED or found[g].code == UNANSWERED])
    return found


async def _round(client: Any, wanted: dict[str, Partitions], batch: int) -> dict[str, GroupOffsets]:
    """Every request sent before any answer is awaited, so the wall is the slowest coordinator's, not the sum."""
    from kafka.errors import KafkaError
    from kafka.protocol.consumer import OffsetFetchRequest

    try:
        coordinators = await by_coordinator(client, list(wanted))
    except KafkaError as exc:
        return {g: GroupOffsets(g, {}, UNANSWERED, f"FindCoordinator: {type(exc).__name__}: {exc}") for g in wanted}
    batched = client._manager.broker_version_data.api_version(OffsetFetchRequest) >= 8
    sent = []
    for node, names in coordinators:
        chunks = [names[i : i + batch] for i in range(0, len(names), batch)] if batched else [[g] for g in names]
        for chunk in chunks:
            request = offset_fetch_request(OffsetFetchRequest, wanted, chunk, batched)
            sent.append((chunk, client._manager.send(request, node_id=node)))
    found: dict[str, GroupOffsets] = {}
    for chunk, pending in sent:
        try:
            answer = await pending
        except KafkaError as exc:
            found |= {g: GroupOffsets(g, {}, UNANSWERED, f"{type(exc).__name__}: {exc}") for g in chunk}
            continue
        found |= parse_answer(answer, chunk)
    return found


def offset_fetch_request(request_type: Any, wanted: Mapping[str, Partitions], chunk: list[str], batched: bool) -> Any:
    """OffsetFetch v8 for `chunk` (each group's partitions, or all), or v1-v7 for its one group."""
    group_type = request_type.OffsetFetchRequestGroup
    if batched:
        groups = [group_type(group_id=g, topics=_topics(group_type.OffsetFetchRequestTopics, wanted[g])) for g in chunk]
        return request_type(groups=groups, min_version=8, max_version=8)
    (group,) = chunk
    topics = _topics(request_type.OffsetFetchRequestTopic, wanted[group])
    return request_type(group_id=group, topics=topics, min_version=2 if topics is None else 1, max_version=7)


def _topics(topic_type: Any, partitions: Partitions) -> list[Any] | None:
    if partitions is None:
        return None
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [topic_type(name=t, partition_indexes=sorted(ps)) for t, ps in sorted(by_topic.items())]


def _forget(client: Any, groups: list[str]) -> None:
    """Drops the cached coordinators of `groups`, so the next lookup asks FindCoordinator again."""
    if not groups:
        return
    from kafka.protocol.metadata.find_coordinator import CoordinatorType

    cached = client._manager.cluster._coordinators
    for group in groups:
        cached.pop((CoordinatorType.GROUP, group), None)
