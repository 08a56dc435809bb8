"""Prometheus families about who is in each consumer group, beside `metrics.py`'s lag families: member counts
(classic and consumer-protocol groups alike), share groups (listed, not judged) and, behind
`lag.metrics_per_member`, each member's lag: which member owns the worst partitions."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.protocol import GroupStatus
from lag.store.access import LagReader

MEMBER_LABELS = ["cluster", "consumer_group", "client_id", "host"]


@dataclass(frozen=True, slots=True)
class MemberLag:
    """The partitions one member (client id and host, Burrow's owner fields) owns in one group, rolled up."""

    cluster: str
    group: str
    client_id: str
    host: str
    lag: int
    """Sum of the current lags of its partitions."""
    max_lag: int
    """The largest current lag among them."""
    partitions: int


def member_lags(statuses: Iterable[GroupStatus]) -> list[MemberLag]:
    """Per group, each owner's partitions rolled up (pure); partitions without a known owner are left out.
    Members that share a client id and a host are one owner here, as they are in Burrow's owner field."""
    out: list[MemberLag] = []
    for status in statuses:
        rolled: dict[tuple[str, str], tuple[int, int, int]] = {}
        for p in status.partitions:
            if not p.owner and not p.client_id:
                continue
            lag, worst, count = rolled.get((p.client_id, p.owner), (0, 0, 0))
            rolled[(p.client_id, p.owner)] = (lag + p.current_lag, max(worst, p.current_lag), count + 1)
        for (client_id, host), (lag, worst, count) in sorted(rolled.items()):
            out.append(MemberLag(status.cluster, status.group, client_id, host, lag, worst, count))
    return out


class GroupMembersCollector(Collector):
    """Register with a `CollectorRegistry` beside `LagCollector`; per-member lag costs one more evaluation of every
    group per scrape, which is why it is an option."""

    def __init__(self, service: LagReader, per_member: bool = False) -> None:
        self.service = service
        self.per_member = per_member

    def collect(self) -> Iterator[Metric]:
        members = GaugeMetricFamily(
            "kafka_pulse_lag_group_members",
            "Members of the consumer group (classic or consumer protocol), as its latest metadata says.",
            labels=["cluster", "consumer_group"],
        )
        share = GaugeMetricFamily(
            "kafka_pulse_lag_share_group",
            "1 for each share group (KIP-932): listed, not judged, since it commits no offsets to judge.",
            labels=["cluster", "share_group"],
        )
        svc = self.service
        with svc.locked() as store:
            for cluster in svc.clusters():
                for group, count in store.member_counts(cluster):
                    members.add_metric([cluster, group], count)
                for group in store.share_groups(cluster):
                    share.add_metric([cluster, group], 1.0)
        yield from (members, share)
        if self.per_member:
            yield from _member_families(member_lags(svc.all_statuses()))


def _member_families(rows: list[MemberLag]) -> Iterator[Metric]:
    lag = GaugeMetricFamily(
        "kafka_pulse_lag_member_lag", "Sum of the lags of the partitions this member owns.", labels=MEMBER_LABELS
    )
    max_lag = GaugeMetricFamily(
        "kafka_pulse_lag_member_max_lag", "Largest lag among the partitions this member owns.", labels=MEMBER_LABELS
    )
    partitions = GaugeMetricFamily(
        "kafka_pulse_lag_member_partitions", "Partitions this member owns in the group.", labels=MEMBER_LABELS
    )
    for row in rows:
        labels = [row.cluster, row.group, row.client_id, row.host]
        lag.add_metric(labels, row.lag)
        max_lag.add_metric(labels, row.max_lag)
        partitions.add_metric(labels, row.partitions)
    yield from (lag, max_lag, partitions)
