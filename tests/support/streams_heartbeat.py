"""A streams-group member speaking StreamsGroupHeartbeat (API key 88, v0) itself, for what no Java Streams client
sends: a topology epoch other than 0 (Kafka Streams 4.3/4.4 always sends 0, docs/lag.md "Streams groups"). Encoded
with kafka-python's protocol classes over wire schemas of our own (the two JSON files beside this module), sent to
the group's coordinator through a kafka-python admin client, as pulse/kafka/streams_groups.py sends its describe."""

from __future__ import annotations

import uuid
import warnings
from typing import Any

_DEPRECATED = r"\w+ is deprecated\. Use files\(\) instead"
_MESSAGES: tuple[Any, Any] | None = None

STALE_TOPOLOGY = 0
"""The heartbeat response's status code for a member whose topology epoch is behind the group's."""


def heartbeat_messages() -> tuple[Any, Any]:
    """StreamsGroupHeartbeat's request and response classes, built once."""
    global _MESSAGES
    if _MESSAGES is None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", _DEPRECATED, DeprecationWarning)
            from kafka.protocol.api_message import ApiMessage

            class StreamsGroupHeartbeatRequest(ApiMessage, load_json=__package__):  # type: ignore[misc, call-arg]
                pass

            class StreamsGroupHeartbeatResponse(ApiMessage, load_json=__package__):  # type: ignore[misc, call-arg]
                pass

            _MESSAGES = (StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse)
    return _MESSAGES


class RawStreamsMember:
    """One member of streams group `group` whose topology (one sub-topology reading `topic`) carries `epoch`."""

    def __init__(self, bootstrap_servers: str, group: str, topic: str, epoch: int) -> None:
        from kafka import KafkaAdminClient

        self.group, self.topic, self.epoch = group, topic, epoch
        self.member_id = uuid.uuid4().hex
        self.process_id = str(uuid.uuid4())
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", _DEPRECATED, DeprecationWarning)
            self.client = KafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=30_000)

    def _send(self, **fields: Any) -> dict[str, Any]:
        request, _ = heartbeat_messages()

        async def ask() -> Any:
            node = (await self.client._find_coordinator_ids([self.group]))[self.group]
            return await self.client._manager.send(
                request(group_id=self.group, member_id=self.member_id, **fields), node_id=node
            )

        answer: dict[str, Any] = self.client._manager.run(ask).to_dict()
        return answer

    def join(self) -> dict[str, Any]:
        """The join heartbeat (member epoch 0, with the topology); the response as a dict."""
        request, _ = heartbeat_messages()
        subtopology = request.Topology.Subtopology(
            subtopology_id="0",
            source_topics=[self.topic],
            source_topic_regex=[],
            state_changelog_topics=[],
            repartition_sink_topics=[],
            repartition_source_topics=[],
            copartition_groups=[],
        )
        topology = request.Topology(epoch=self.epoch, subtopologies=[subtopology])
        return self._send(
            member_epoch=0,
            endpoint_information_epoch=0,
            rebalance_timeout_ms=30_000,
            topology=topology,
            active_tasks=[],
            standby_tasks=[],
            warmup_tasks=[],
            process_id=self.process_id,
            client_tags=[],
        )

    def leave(self) -> dict[str, Any]:
        """The leave heartbeat (member epoch -1): the member is out of the group at once."""
        return self._send(member_epoch=-1, endpoint_information_epoch=0)

    def close(self) -> None:
        self.client.close()
