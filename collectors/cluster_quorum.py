"""The KRaft quorum of a cluster-state read (`cluster_state.ClusterSnapshot`): DescribeQuorum through kafka-python
(pulse/kafka/quorum.py, the reader `check` uses for SASL clusters), asked of one live broker at a time so a hung one
costs an attempt, not the read."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace

from collectors.cluster_state import ATTEMPT_S, ELR_CLIENT_ID, ClusterSnapshot
from pulse.config import ClusterConfig
from pulse.kafka.quorum import QuorumNotKraft, QuorumUnread, describe_quorum, parse_quorum
from pulse.profile import kafka_python_config

_LOG = logging.getLogger(__name__)


def fetch_quorum(
    cluster: ClusterConfig, snapshot: ClusterSnapshot, timeout_s: float, unanswered: set[int] | None = None
) -> ClusterSnapshot:
    """`snapshot` with the KRaft quorum from DescribeQuorum (pulse/kafka/quorum.py, the reader `check` uses) within
    `timeout_s`, asked of one live broker after another (`ATTEMPT_S` each, the last one all that is left), so a hung
    broker costs an attempt, not the read; `unanswered` (kept by the caller across reads) holds the brokers that did
    not answer, asked last. A failed read is `quorum_up=False`, logged, never raised; a ZooKeeper cluster has no
    quorum (`quorum_up=None`)."""
    end = time.monotonic() + timeout_s
    unanswered = set() if unanswered is None else unanswered
    nodes = quorum_order(snapshot.addresses, unanswered) or [(None, snapshot.servers)]
    failed: list[str] = []
    for at, (node, servers) in enumerate(nodes):
        left = end - time.monotonic()
        if left <= 0:
            break
        limit = left if at == len(nodes) - 1 else min(left, ATTEMPT_S)
        try:
            answer = describe_quorum(kafka_python_config(cluster, ELR_CLIENT_ID, limit, servers), node=node)
            if node is not None:
                unanswered.discard(node)
            return replace(snapshot, quorum=parse_quorum(answer, time.time()), quorum_up=True)
        except QuorumNotKraft:
            return replace(snapshot, quorum=None, quorum_up=None)
        except QuorumUnread as exc:
            if node is not None:
                unanswered.add(node)
            failed.append(f"broker {node}: {exc}" if node is not None else str(exc))
    _LOG.warning("cluster %r: KRaft quorum not read: %s", cluster.name, "; ".join(failed) or "no time left")
    return replace(snapshot, quorum=None, quorum_up=False)


def quorum_order(
    addresses: Mapping[int, tuple[str, int]], unanswered: set[int]
) -> list[tuple[int | None, tuple[str, ...]]]:
    """The brokers to ask DescribeQuorum of, as (node, its host:port), by id with the `unanswered` last (pure)."""
    ordered = sorted(addresses, key=lambda n: (n in unanswered, n))
    return [(n, (f"{addresses[n][0]}:{addresses[n][1]}",)) for n in ordered]
