"""Share groups (KIP-932) on the lag listener: the `kafka_pulse_lag_share_*` families on /metrics and two extension
routes beside Burrow's, `/v3/kafka/{cluster}/sharegroup` and `.../sharegroup/{group}` (Burrow has no share groups;
its own routes are unchanged). Bodies use Burrow's v3 envelope. A lag or start offset the broker did not give is
absent from /metrics and null in JSON, never 0.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Collection, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from lag.serve.burrow_json import envelope
from lag.store.share_board import ShareBoard, ShareReading
from pulse.http import Request, Response, Route
from pulse.kafka.share_stall import verdict_json

_JSON = "application/json"
_PARTITION = ["cluster", "share_group", "topic", "partition"]


NOT_READ_YET = "no share-group read yet"
"""The listing's reason for a configured cluster whose first read has not finished: an incomplete read (UNKNOWN in
`check --lag-url`, as on the page inside the process), never an empty, complete one."""


class ShareGroupApi:
    """The two share-group routes over a `ShareBoard`; a configured cluster not read yet lists no group with the
    reason NOT_READ_YET, any other cluster answers Burrow's 404 body."""

    def __init__(self, board: ShareBoard, clusters: Collection[str] = ()) -> None:
        self.board = board
        self.clusters = frozenset(clusters)
        self.hostname = socket.gethostname()

    def routes(self) -> list[Route]:
        base = "/v3/kafka/{cluster}/sharegroup"
        return [Route("GET", base, self._groups), Route("GET", f"{base}/{{group}}", self._group)]

    def _json(self, request: Request, code: int, message: str, error: bool = False, **payload: object) -> Response:
        body = envelope(message, request.path, self.hostname, error=error, **payload)
        return Response(code, json.dumps(body).encode(), _JSON)

    def _reading(self, request: Request) -> ShareReading | None:
        return self.board.latest().get(request.params["cluster"])

    def _groups(self, request: Request) -> Response:
        reading = self._reading(request)
        if reading is None and request.params["cluster"] in self.clusters:
            return self._json(request, 200, "share group list returned", sharegroups=[], reason=NOT_READ_YET)
        if reading is None:
            return self._json(request, 404, "cluster module not found", error=True)
        names = [v.group for v in reading.verdicts]
        return self._json(request, 200, "share group list returned", sharegroups=names, reason=reading.reason)

    def _group(self, request: Request) -> Response:
        reading = self._reading(request)
        group = request.params["group"]
        verdict = next((v for v in reading.verdicts if v.group == group), None) if reading else None
        if verdict is None:
            return self._json(request, 404, "share group not found", error=True)
        return self._json(request, 200, "share group status returned", status=verdict_json(verdict))


class ShareGroupCollector(Collector):
    """Every cluster's latest judged read as gauges, at scrape time."""

    def __init__(self, board: ShareBoard) -> None:
        self.board = board

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lag = GaugeMetricFamily(
            "kafka_pulse_lag_share_partition_lag",
            "Records of a share-partition not yet delivered and completed, as the broker computes it (KIP-1226); "
            "absent when the broker does not say.",
            labels=_PARTITION,
        )
        start = GaugeMetricFamily(
            "kafka_pulse_lag_share_partition_start_offset",
            "The share-partition start offset: the first record not yet completed.",
            labels=_PARTITION,
        )
        unmoved = GaugeMetricFamily(
            "kafka_pulse_lag_share_partition_start_offset_unmoved_seconds",
            "Seconds the share-partition start offset has stayed where it is, as this process has seen it.",
            labels=_PARTITION,
        )
        status = GaugeMetricFamily(
            "kafka_pulse_lag_share_partition_status",
            "Share-partition verdict: 1 STALLED (start offset unmoved past lag.share_groups.stall_after_s while "
            "records wait), 0 OK, -1 UNKNOWN (no lag or start offset).",
            labels=_PARTITION,
        )
        group_status = GaugeMetricFamily(
            "kafka_pulse_lag_share_group_status",
            "Share-group verdict, its worst partition's: 1 STALLED, 0 OK, -1 UNKNOWN.",
            labels=["cluster", "share_group"],
        )
        group_lag = GaugeMetricFamily(
            "kafka_pulse_lag_share_group_lag",
            "The sum of a share group's known partition lags; absent when none is known.",
            labels=["cluster", "share_group"],
        )
        members = GaugeMetricFamily(
            "kafka_pulse_lag_share_group_members",
            "Members of a share group, as its coordinator describes it.",
            labels=["cluster", "share_group"],
        )
        state = GaugeMetricFamily(
            "kafka_pulse_lag_share_group_state",
            "1 for a share group's coordinator state (Empty, Stable, Dead, ...; Unknown when not described).",
            labels=["cluster", "share_group", "state"],
        )
        read_ok = GaugeMetricFamily(
            "kafka_pulse_lag_share_groups_read_complete",
            "1 when the last read of a cluster's share groups read every group, 0 when it failed or was cut short.",
            labels=["cluster"],
        )
        for cluster, reading in sorted(self.board.latest().items()):
            read_ok.add_metric([cluster], 0.0 if reading.reason else 1.0)
            for v in reading.verdicts:
                group_status.add_metric([cluster, v.group], float(v.status))
                members.add_metric([cluster, v.group], float(v.members))
                state.add_metric([cluster, v.group, v.state], 1.0)
                if v.total_lag is not None:
                    group_lag.add_metric([cluster, v.group], float(v.total_lag))
                for p in v.partitions:
                    labels = [cluster, v.group, p.topic, str(p.partition)]
                    status.add_metric(labels, float(p.status))
                    if p.lag is not None:
                        lag.add_metric(labels, float(p.lag))
                    if p.start_offset is not None:
                        start.add_metric(labels, float(p.start_offset))
                    if p.unmoved_s is not None:
                        unmoved.add_metric(labels, p.unmoved_s)
        yield from (lag, start, unmoved, status, group_status, group_lag, members, state, read_ok)
