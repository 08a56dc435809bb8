"""`check`'s quorum read on a connection of its own (pulse/kafka/quorum_wire.py) against kafka-python's decoding
(`describe_quorum`, the SASL and collectors' path) on the same real 3-node KRaft cluster: the same leader, epoch,
voters and observers at every version, so the verdict does not depend on which one asked or on the broker's age;
and a closed port is `QuorumUnreachable`, as kafka-python's bootstrap failure is."""

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


@pytest.mark.parametrize("version", [0, 1])
def test_the_kafka_python_path_reads_the_versions_of_brokers_before_3_8(kafka: KafkaHandle, version: int) -> None:
    """The answers brokers before 3.8 give (v0-v1, no error message): kafka-python's own `describe_metadata_quorum`
    raised KeyError on them, which took the collectors' cluster state down with it."""
    servers = kafka.bootstrap_servers.split(",")
    cluster = ClusterConfig.model_validate({"name": "dev", "bootstrap_servers": servers})
    answer = describe_quorum(kafka_python_config(cluster, "quorum-test", 10.0), max_version=version)
    theirs = parse_quorum(answer, time.time())
    ours = parse_quorum(describe_quorum_wire(servers, 10.0, None), time.time())
    assert shape(theirs) == shape(ours)
    assert "error_message" not in answer["topics"][0]["partitions"][0]
    ages = [v.caught_up_age_s for v in theirs.voters]
    assert all(a is None for a in ages) if version == 0 else all(a is not None for a in ages)  # v1 added them


def test_a_closed_port_is_unreachable_and_the_next_server_answers(kafka: KafkaHandle) -> None:
    (closed,) = free_ports(1)
    with pytest.raises(QuorumUnreachable, match="cannot connect"):
        describe_quorum_wire([f"{LOOPBACK}:{closed}"], 5.0, None)
    answer = describe_quorum_wire([f"{LOOPBACK}:{closed}", *kafka.bootstrap_servers.split(",")], 10.0, None)
    assert parse_quorum(answer, time.time()).leader in (1, 2, 3)
