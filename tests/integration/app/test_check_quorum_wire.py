"""`check`'s quorum read on a connection of its own (pulse/kafka/quorum_wire.py) against kafka-python's
`describe_metadata_quorum` on the same real 3-node KRaft cluster: the same leader, epoch, voters and observers, so
the controller section's verdict does not depend on which one asked; and a closed port is `QuorumUnreachable`, as
kafka-python's bootstrap failure is."""

from __future__ import annotations

import time

import pytest

from pulse.config import ClusterConfig
from pulse.kafka.quorum import QuorumState, QuorumUnreachable, describe_quorum, parse_quorum
from pulse.kafka.quorum_wire import describe_quorum_wire
from pulse.ports import LOOPBACK, free_ports
from pulse.profile import kafka_python_config
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration


def shape(state: QuorumState) -> tuple[object, ...]:
    """What the verdict reads, less the ages and lags, which move between two reads."""
    return state.leader, state.epoch, tuple(v.node for v in state.voters), state.observers


def test_the_wire_read_agrees_with_kafka_python(kafka: KafkaHandle) -> None:
    servers = kafka.bootstrap_servers.split(",")
    cluster = ClusterConfig.model_validate({"name": "dev", "bootstrap_servers": servers})
    theirs = parse_quorum(describe_quorum(kafka_python_config(cluster, "quorum-test", 10.0)), time.time())
    ours = parse_quorum(describe_quorum_wire(servers, 10.0, None), time.time())
    assert shape(ours) == shape(theirs)
    assert ours.leader in (1, 2, 3) and len(ours.voters) == 3
    assert all(v.caught_up_age_s is not None for v in ours.voters)  # v1+ was asked: the ages are judged


def test_a_closed_port_is_unreachable_and_the_next_server_answers(kafka: KafkaHandle) -> None:
    (closed,) = free_ports(1)
    with pytest.raises(QuorumUnreachable, match="cannot connect"):
        describe_quorum_wire([f"{LOOPBACK}:{closed}"], 5.0, None)
    answer = describe_quorum_wire([f"{LOOPBACK}:{closed}", *kafka.bootstrap_servers.split(",")], 10.0, None)
    assert parse_quorum(answer, time.time()).leader in (1, 2, 3)
