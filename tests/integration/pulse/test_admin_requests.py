"""`describe_cluster` (pulse/admin_requests.py) on the shared cluster with broker 3 killed: until the quorum fences
it, metadata answers name it controller about one time in three, and a plain DescribeCluster then waits for it to
the end of its timeout. The helper asks again after fresh metadata and answers within its bound."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from pulse.admin_requests import describe_cluster
from pulse.paths import cache_dir
from pulse.polling import poll
from pulse.profile import ADMIN_SETTINGS
from tests.fixtures.kafka import KafkaHandle

pytestmark = pytest.mark.integration

VICTIM = 3
RETRIES_WANTED = 2
"""Dead-controller picks the test waits to see answered: enough to show the retry is what answers them."""


def test_describe_cluster_asks_again_when_the_metadata_names_a_dead_controller(
    kafka: KafkaHandle, caplog: pytest.LogCaptureFixture
) -> None:
    """Fresh clients, one after the other, from the kill until broker 3 is fenced or two dead picks were seen:
    every DescribeCluster answers (with a 10 s bound, so a dead pick waited out would raise), and the log shows
    that at least one was a dead pick answered by asking again."""
    caplog.set_level(logging.DEBUG, logger="pulse.admin_requests")
    kafka.cluster.kill(VICTIM)
    try:
        answers, retries, fenced = 0, 0, False
        while retries < RETRIES_WANTED and not fenced:
            admin = AdminClient({**kafka.client_config(), **ADMIN_SETTINGS})
            admin.list_topics(timeout=10)
            described = describe_cluster(admin, 10)
            answers += 1
            fenced = VICTIM not in {node.id for node in described.nodes}
            retries = sum("asking again" in r.getMessage() for r in caplog.records)
        assert retries >= 1, f"{answers} answers and none after a dead controller pick: the case was not exercised"
    finally:
        kafka.cluster.restart(VICTIM, cache_dir())
    admin = kafka.admin()
    poll(lambda: admin.list_topics(timeout=10), healed, 120, f"broker {VICTIM} back in every ISR it belongs to")


def healed(metadata: Any) -> bool:
    """Broker 3 registered and in the ISR of every partition it holds a replica of."""
    partitions = [p for topic in metadata.topics.values() for p in topic.partitions.values()]
    return VICTIM in metadata.brokers and all(VICTIM in p.isrs for p in partitions if VICTIM in p.replicas)
