"""The KRaft metadata quorum through DescribeQuorum (brokers forward it to the active controller), read with
kafka-python's `describe_metadata_quorum` (librdkafka has no such call). `kafka-pulse check` judges it; the
collectors export it as the `kafka_pulse_kraft_*` families. One parser for both (pure)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulse.kafka.admin_client import close_now, kafka_python_warnings, open_admin_client

METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log; its partition 0 is the one DescribeQuorum describes."""


class QuorumNotKraft(Exception):
    """The cluster does not know DescribeQuorum: it runs ZooKeeper."""


class QuorumUnread(Exception):
    """DescribeQuorum could not be asked or answered; the message says why."""


class QuorumUnreachable(QuorumUnread):
    """No broker could be connected to, to ask."""


@dataclass(frozen=True)
class VoterState:
    """One voter of the KRaft metadata quorum."""

    node: int
    lag_records: int
    """The leader's high watermark minus this voter's log end offset."""
    caught_up_age_s: float | None
    """Seconds since the voter last caught up with the leader; None when the leader does not know."""


@dataclass(frozen=True)
class QuorumState:
    """DescribeQuorum's answer: the leader, its epoch and each voter's lag."""

    leader: int | None
    """The active controller; None when there is none."""
    epoch: int
    high_watermark: int
    voters: tuple[VoterState, ...]
    observers: tuple[int, ...] = ()
    """Node ids replicating the metadata log without a vote: brokers of a cluster with dedicated controllers, and a
    controller not (or no longer) in the voter set: one started to be added, or a removed voter (KIP-853)."""


def parse_quorum(answer: Mapping[str, Any], now_s: float) -> QuorumState:
    """The DescribeQuorum response (kafka-python's dict of the protocol's fields) as a state (pure); an answer
    without the metadata partition, or with its error, raises QuorumUnread."""
    try:
        partition = answer["topics"][0]["partitions"][0]
    except (KeyError, IndexError, TypeError) as exc:
        raise QuorumUnread(f"unexpected answer {answer!r:.200}") from exc
    if partition.get("error"):
        raise QuorumUnread(str(partition["error"]))
    hwm = int(partition.get("high_watermark", -1))
    voters = []
    for voter in partition.get("current_voters") or []:
        caught_up_ms = int(voter.get("last_caught_up_timestamp", -1))
        end = int(voter.get("log_end_offset", -1))
        voters.append(
            VoterState(
                node=int(voter["replica_id"]),
                lag_records=max(0, hwm - end) if hwm >= 0 and end >= 0 else 0,
                caught_up_age_s=max(0.0, now_s - caught_up_ms / 1000) if caught_up_ms > 0 else None,
            )
        )
    observers = tuple(sorted(int(o["replica_id"]) for o in partition.get("observers") or []))
    leader = int(partition.get("leader_id", -1))
    epoch = int(partition.get("leader_epoch", -1))
    return QuorumState(leader if leader >= 0 else None, epoch, hwm, tuple(voters), observers)


def describe_quorum(
    settings: Mapping[str, Any],
    close: Callable[[Callable[[], None]], None] | None = None,
    max_version: int | None = None,
    node: int | None = None,
) -> dict[str, Any]:
    """DescribeQuorum's answer with kafka-python `settings` (pulse.profile.kafka_python_config), in
    `describe_metadata_quorum`'s shape; raises QuorumNotKraft on a ZooKeeper cluster, QuorumUnreachable when no
    broker answers, QuorumUnread for anything else. `close` runs the client's close (the check closes on another
    thread, so a hung broker cannot hold it); `max_version` caps the version asked (brokers before 3.8 know v0-v1);
    `node` is the broker asked (by default one kafka-python picks at random, once it has no connection yet)."""
    with kafka_python_warnings():
        # kafka-python 3.0.12 drops the socket of a connection whose ApiVersions timed out (a SIGSTOPped node) when
        # `close` cancels the connecting task, leaving it to the socket's finalizer, which closes it and warns.
        warnings.filterwarnings("ignore", r"unclosed <socket\.socket", ResourceWarning)
        from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
        from kafka.errors import KafkaError as KafkaPythonError
        from kafka.protocol.admin.cluster import DescribeQuorumRequest

        try:
            client = open_admin_client(settings)
        except KafkaPythonError as exc:
            raise QuorumUnreachable(f"cannot connect: {exc}") from exc
        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(
            topics=[topic(topic_name=METADATA_TOPIC, partitions=[topic.PartitionData(partition_index=0)])],
            max_version=max_version,
        )
        try:
            # Not `describe_metadata_quorum`: kafka-python 3.0.12's pops the partitions' `error_message`, which
            # answers before v2 lack, so on a broker before 3.8 it raised KeyError (the collectors' cluster state).
            return answer_of(client._manager.run(_send, client, request, node).to_dict())
        except (IncompatibleBrokerVersion, UnsupportedVersionError) as exc:
            raise QuorumNotKraft(str(exc)) from exc
        except KafkaPythonError as exc:
            raise QuorumUnread(f"{type(exc).__name__}: {exc}") from exc
        finally:
            (close or close_now)(client.close)


async def _send(client: Any, request: Any, node: int | None) -> Any:
    """The request to `node`, or any broker (each forwards DescribeQuorum to the active controller), on the client's
    loop."""
    return await client._manager.send(request, node_id=node)


def answer_of(decoded: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded DescribeQuorum answer of any version (kafka-python's `to_dict()`) as `describe_metadata_quorum`
    returns it: each partition's error as None or its text; a top-level error raises QuorumUnread (pure)."""
    if code := decoded.get("error_code"):
        exc = kafka_error(code, decoded.get("error_message") or "")
        raise QuorumUnread(f"{type(exc).__name__}: {exc}")
    topics = []
    for topic in decoded.get("topics") or []:
        partitions = []
        for partition in topic.get("partitions") or []:
            fields = {k: v for k, v in partition.items() if k not in ("error_code", "error_message")}
            code = partition.get("error_code", 0)
            error = str(kafka_error(code, partition.get("error_message"))) if code else None
            partitions.append({**fields, "error": error})
        topics.append({**topic, "partitions": partitions})
    return {"topics": topics, **({"nodes": decoded["nodes"]} if "nodes" in decoded else {})}


def kafka_error(code: int, message: str | None) -> Exception:
    """kafka-python's exception for a non-zero error `code`, so both quorum readers word a refusal as kafka-python
    does (the wire reader pays kafka-python's import only on this path)."""
    with kafka_python_warnings():
        from kafka.errors import for_code

    return for_code(code)(message)  # type: ignore[no-any-return]
