"""Prometheus families for the lag evaluator: a client_python `Collector` that evaluates every group at scrape time (as
Burrow's `/metrics` does) and yields Burrow's (`core/internal/httpserver/prometheus.go`) and kafka-lag-exporter's
(`Metrics.scala`) family names, plus ours (`kafka_pulse_lag_*`): exact time lag, the page-cache hint, source freshness
and ingestion counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lag.serve.text_families import FAMILIES, Family, Template, render
from lag.store.access import LagReader
from lag.store.arrays import release_freed_heap
from pulse.http.exposition import Encoder, RenderedFamilies, encode_families

_MARK = re.compile("\0([0-9])\0")
RELEASE_FROM_ROWS = 1 << 16
"""A scrape of at least this many groups and group-partitions hands the freed heap back once its text is written."""


class LagCollector(Collector):
    """Register with a `CollectorRegistry`; nothing is module-level. The group and partition families are written
    as text from the evaluator's arrays (`RenderedFamilies`, served by pulse.http's exposition); the service's own
    families stay client_python objects."""

    def __init__(
        self,
        service: LagReader,
        granularity: Literal["partition", "group"] = "partition",
        release_heap: Callable[[], object] = release_freed_heap,
    ) -> None:
        self.service = service
        self.granularity = granularity
        """`group` leaves out the per-partition families: at 200k partitions they are most of a scrape's series."""
        self.release_heap = release_heap
        """Called after a large scrape's last piece (`RELEASE_FROM_ROWS`); a test passes a recorder."""

    def collect(self) -> Iterator[Metric]:
        yield RenderedFamilies(self.render)
        yield from self._service_families()

    def render(self, encoder: Encoder) -> Iterator[bytes]:
        """The group and partition families in `encoder`'s format: evaluated under the lock now, written after it
        piece by piece as the listener sends them."""
        rows = self.service.scrape_rows(self.service.clock_ms())
        templates = [template(encoder, f) for f in FAMILIES]
        pieces = render(rows, templates, self.granularity)
        if sum(len(r.names) + len(r.current_lag) for r in rows) < RELEASE_FROM_ROWS:
            return pieces
        return _then_release(pieces, self.release_heap)

    def _service_families(self) -> Iterator[Metric]:
        """Per cluster: is it judged (fresh), page-cache windows, records read; per result: commits ingested."""
        svc = self.service
        now = svc.clock_ms()
        up = GaugeMetricFamily(
            "kafka_pulse_lag_source_up", "1 when the cluster's offsets are fresh enough to judge its groups.",
            labels=["cluster"],
        )  # fmt: skip
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
        yield from (up, windows, records, commits)


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


def template(encoder: Encoder, family: Family) -> Template:
    """Cut from the encoder's rendering of the family with one sample whose label values are markers."""
    metric = GaugeMetricFamily(family.name, family.documentation, labels=family.labels)
    metric.add_metric([f"\0{i}\0" for i in range(len(family.labels))], 0.0)
    *header, line = encode_families(encoder, [metric]).decode().splitlines(keepends=True)
    if not line.endswith(" 0.0\n"):
        raise ValueError(f"{family.name}: unexpected sample line {line!r}")
    pieces = _MARK.split(line[: -len("0.0\n")])
    order = [int(i) for i in pieces[1::2]]
    texts = pieces[0::2]
    roles = [0, 1, 3, 2] if family.per_partition else [0, 1]  # labels sorted by name: partition before topic
    if order != roles:
        raise ValueError(f"{family.name}: labels in order {order}, expected {roles}")
    return Template("".join(header), *texts)
