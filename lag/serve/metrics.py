"""Prometheus families for the lag evaluator: one client_python `Collector` that evaluates every group once per scrape
(as Burrow's `/metrics` does) and yields every lag family from that one pass: Burrow's
(`core/internal/httpserver/prometheus.go`) and kafka-lag-exporter's (`Metrics.scala`) group and partition families,
plus ours (`kafka_pulse_lag_*`): exact time lag, the page-cache hint, source freshness, ingestion counts, group
members and, while a broker's produce latency is up, the noisy neighbours.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.protocol import ClusterRows, GroupStatus
from lag.serve.text_families import render, templates
from lag.store.access import LagReader
from lag.store.arrays import release_freed_heap
from lag.store.group_index import NAME_TOO_LONG, TOO_MANY_GROUPS
from pulse.http.exposition import Encoder, RenderedFamilies

RELEASE_FROM_ROWS = 1 << 16
"""A scrape of at least this many groups and group-partitions hands the freed heap back once its text is written."""
MEMBER_LABELS = ["cluster", "consumer_group", "client_id", "host"]
NEIGHBOUR_LABELS = ["cluster", "broker", "group", "topic"]
DROP_REASONS = (NAME_TOO_LONG, TOO_MANY_GROUPS)


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


class LagCollector(Collector):
    """Register with a `CollectorRegistry`; nothing is module-level. Each `collect` reads the service's rows once
    (`LagReader.scrape_rows`): the group and partition families are written as text from them (`RenderedFamilies`,
    served by pulse.http's exposition), the noisy neighbours are read from them; the other families stay client_python
    objects."""

    def __init__(
        self,
        service: LagReader,
        granularity: Literal["partition", "group"] = "partition",
        release_heap: Callable[[], object] = release_freed_heap,
        per_member: bool = False,
    ) -> None:
        self.service = service
        self.granularity = granularity
        """`group` leaves out the per-partition families: at 200k partitions they are most of a scrape's series."""
        self.per_member = per_member
        """Per-member lag (`lag.metrics_per_member`): one more evaluation of every group per scrape, as objects."""
        self.release_heap = release_heap
        """Called after a large scrape's last piece (`RELEASE_FROM_ROWS`); a test passes a recorder."""

    def collect(self) -> Iterator[Metric]:
        held = [self.service.scrape_rows(self.service.clock_ms())]
        neighbours = _neighbour_families(held[0])
        yield RenderedFamilies(lambda encoder: self.render_rows(held.pop(), encoder))  # the rows go with the text
        yield from self._service_families()
        yield from self._member_families()
        yield from neighbours

    def render(self, encoder: Encoder) -> Iterator[bytes]:
        """The group and partition families in `encoder`'s format from rows read now (the bench times this)."""
        return self.render_rows(self.service.scrape_rows(self.service.clock_ms()), encoder)

    def render_rows(self, rows: list[ClusterRows], encoder: Encoder) -> Iterator[bytes]:
        """The group and partition families of `rows`, written piece by piece as the listener sends them."""
        large = sum(len(r.names) + len(r.current_lag) for r in rows) >= RELEASE_FROM_ROWS
        pieces = render(rows, templates(encoder), self.granularity)
        del rows  # the pieces hold them until the last is written
        return _then_release(pieces, self.release_heap) if large else pieces

    def _service_families(self) -> Iterator[Metric]:
        """Per cluster: is it judged (fresh), page-cache windows, records read, groups dropped; per result: commits
        ingested."""
        svc = self.service
        now = svc.clock_ms()
        up = GaugeMetricFamily(
            "kafka_pulse_lag_source_up",
            "1 when the cluster's offsets are fresh enough to judge its groups.",
            labels=["cluster"],
        )
        windows = GaugeMetricFamily(
            "kafka_pulse_lag_page_cache_window_seconds",
            "Seconds of recent writes the broker's page cache holds (estimate; absent while unknown).",
            labels=["cluster", "broker"],
        )
        records = CounterMetricFamily(
            "kafka_pulse_lag_offsets_records",
            "__consumer_offsets records read, by decoded kind (OffsetCommit, GroupMetadata, Undecodable...).",
            labels=["cluster", "kind"],
        )
        commits = CounterMetricFamily(
            "kafka_pulse_lag_commits", "Commits offered to the store, by what became of them.", labels=["result"]
        )
        dropped = CounterMetricFamily(
            "kafka_pulse_lag_groups_dropped",
            "Records of consumer groups dropped at ingestion, never stored nor exported: an id longer than "
            "lag.max_group_name_bytes, or a new group past lag.max_groups.",
            labels=["cluster", "reason"],
        )
        freshness = svc.freshness
        with svc.locked() as store:
            for cluster in svc.clusters():
                healthy = freshness is None or freshness.unavailable_reason(cluster, now) is None
                up.add_metric([cluster], 1.0 if healthy else 0.0)
            for cluster, estimate in sorted(svc.page_caches().items()):
                for broker, window in sorted(estimate.windows_s.items()):
                    if not math.isinf(window):
                        windows.add_metric([cluster, str(broker)], window)
            for cluster, counts in sorted(svc.record_counts().items()):
                for kind, n in sorted(counts.items()):
                    records.add_metric([cluster, kind], n)
            for result, n in sorted(store.ingested.items(), key=lambda item: item[0].value):
                commits.add_metric([result.value], n)
            counted = svc.dropped_groups()
            for cluster in sorted(set(svc.clusters()) | set(counted)):
                for reason in DROP_REASONS:
                    dropped.add_metric([cluster, reason], counted.get(cluster, {}).get(reason, 0))
        yield from (up, windows, records, commits, dropped)

    def _member_families(self) -> Iterator[Metric]:
        """Who is in each group: member counts (classic and consumer-protocol groups alike), share groups (listed,
        not judged) and, with `per_member`, each member's lag: which member owns the worst partitions."""
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
            yield from _member_lag_families(member_lags(svc.all_statuses()))


def _then_release(pieces: Iterator[bytes], release_heap: Callable[[], object]) -> Iterator[bytes]:
    """The pieces, then `release_heap` once they are sent or dropped, when the rows that the finished `render` held
    are freed. Why: a scrape's arrays come from malloc's heap, whose pages glibc keeps once they are freed (at
    1,000,000 groups of one partition, 20-50 B a group between two scrapes: docs/benchmarks.md); the next scrape
    faults them in again instead."""
    try:
        yield from pieces
    finally:
        del pieces  # closed or exhausted: its frame, and with it the rows, is gone
        release_heap()


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


def _member_lag_families(rows: list[MemberLag]) -> Iterator[Metric]:
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


def _neighbour_families(rows: Sequence[ClusterRows]) -> list[Metric]:
    """`kafka_pulse_noisy_neighbour{cluster,broker,group,topic}` (1 per diagnosis) and its numbers, from the rows'
    diagnosis; no series while nothing is diagnosed or no slow-broker board is given (standalone `lag`)."""
    named = GaugeMetricFamily(
        "kafka_pulse_noisy_neighbour",
        "1 while the group reads the topic beyond the page cache on a broker whose produce latency is up.",
        labels=NEIGHBOUR_LABELS,
    )
    lag = GaugeMetricFamily(
        "kafka_pulse_noisy_neighbour_lag_seconds",
        "How far back the named group reads the topic's partitions led by the broker (largest time lag).",
        labels=NEIGHBOUR_LABELS,
    )
    window = GaugeMetricFamily(
        "kafka_pulse_noisy_neighbour_page_cache_window_seconds",
        "The page-cache window that lag exceeds (seconds of recent data the broker's page cache holds).",
        labels=NEIGHBOUR_LABELS,
    )
    latency = GaugeMetricFamily(
        "kafka_pulse_noisy_neighbour_produce_latency_seconds",
        "The broker's produce latency as the slow-broker detector reported it, for brokers with a diagnosis.",
        labels=["cluster", "broker"],
    )
    latencies: dict[tuple[str, str], float] = {}
    for rows_of_cluster in rows:
        cluster = rows_of_cluster.cluster
        for n in rows_of_cluster.noisy_neighbours:
            labels = [cluster, str(n.broker), n.group, n.topic]
            named.add_metric(labels, 1.0)
            lag.add_metric(labels, n.lag_seconds)
            window.add_metric(labels, n.window_s)
            if n.produce_latency_ms is not None:
                latencies[(cluster, str(n.broker))] = n.produce_latency_ms / 1000.0
    for key, seconds in sorted(latencies.items()):
        latency.add_metric(list(key), seconds)
    return [named, lag, window, latency]
