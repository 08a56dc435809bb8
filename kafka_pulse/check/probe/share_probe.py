"""`check`'s own read of the share groups (with `lag.share_groups.enabled`, no `--lag-url`): one
DescribeShareGroupOffsets and ShareGroupDescribe round through pulse/kafka/share_groups.py, within the deadline,
its client closed on a daemon thread so a hung broker never holds the verdict."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_pulse.check.deadline import Deadline, close_later
from kafka_pulse.check.judge.share_verdicts import ShareFacts, from_one_read
from pulse.config import ClusterConfig
from pulse.kafka.share_groups import read_share_groups
from pulse.profile import kafka_python_config

CLIENT_ID = "kafka-pulse-check"


def read_shares_once(cluster: ClusterConfig, servers: Iterable[str], deadline: Deadline) -> ShareFacts:
    """Every share group's start offsets, lag, state and members, as read once; nothing judged (no window)."""
    settings = kafka_python_config(cluster, CLIENT_ID, deadline.share(0.9), list(servers))
    return from_one_read(read_share_groups(settings, close=close_later))
