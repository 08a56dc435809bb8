"""Streams groups (KIP-1071) on the lag listener: the `kafka_pulse_streams_group_*` families on /metrics and two
extension routes beside Burrow's, `/v3/kafka/{cluster}/streamsgroup` and `.../streamsgroup/{group}` (Burrow has no
streams groups; its own routes are unchanged). A group's input-topic lag is the lag evaluator's verdict for the same
group id (its commits are consumer-group commits), so the route and `/consumer/{group}/lag` never disagree.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from lag.protocol import GroupStatus, Mode
from lag.serve.burrow_json import Json, envelope, group_status_json
from lag.store.access import LagReader
from lag.store.streams_board import StreamsBoard, StreamsReading
from pulse.http import Request, Response, Route
from pulse.kafka.streams_groups import StreamsGroup

_JSON = "application/json"
_GROUP = ["cluster", "streams_group"]


def streams_group_json(group: StreamsGroup, lag: GroupStatus | None, mode: Mode) -> Json:
    """One streams group with its members and the evaluator's input-topic verdict (pure); `lag` None: not asked."""
    stale = {m.member_id for m in group.stale_members}
    return {
        "group": group.group,
        "state": group.state,
        "status": group.status.name,
        "reason": group.reason(),
        "group_epoch": group.group_epoch,
        "target_assignment_epoch": group.assignment_epoch,
        "topology_epoch": group.topology_epoch,
        "source_topics": list(group.source_topics),
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "process_id": m.process_id,
                "member_epoch": m.member_epoch,
                "topology_epoch": m.topology_epoch,
                "active_tasks": m.active_tasks,
                "is_classic": m.is_classic,
                "stale_topology": m.member_id in stale,
            }
            for m in group.members
        ],
        "lag": None if lag is None else group_status_json(lag, mode),
    }


class StreamsGroupApi:
    """The two streams-group routes over a `StreamsBoard` and the lag service; clusters not read yet answer
    Burrow's 404 body."""

    def __init__(self, board: StreamsBoard, service: LagReader) -> None:
        self.board = board
        self.service = service
        self.hostname = socket.gethostname()

    def routes(self) -> list[Route]:
        base = "/v3/kafka/{cluster}/streamsgroup"
        return [Route("GET", base, self._groups), Route("GET", f"{base}/{{group}}", self._group)]

    def _json(self, request: Request, code: int, message: str, error: bool = False, **payload: object) -> Response:
        body = envelope(message, request.path, self.hostname, error=error, **payload)
        return Response(code, json.dumps(body).encode(), _JSON)

    def _reading(self, request: Request) -> StreamsReading | None:
        return self.board.latest().get(request.params["cluster"])

    def _groups(self, request: Request) -> Response:
        reading = self._reading(request)
        if reading is None:
            return self._json(request, 404, "cluster module not found", error=True)
        names = [g.group for g in reading.groups]
        return self._json(request, 200, "streams group list returned", streamsgroups=names, reason=reading.reason)

    def _group(self, request: Request) -> Response:
        reading = self._reading(request)
        cluster, name = request.params["cluster"], request.params["group"]
        group = next((g for g in reading.groups if g.group == name), None) if reading else None
        if group is None:
            return self._json(request, 404, "streams group not found", error=True)
        lag = self.service.group_status(cluster, name, self.service.clock_ms())
        body = streams_group_json(group, lag, self.service.settings.mode)
        return self._json(request, 200, "streams group status returned", status=body)


class StreamsGroupCollector(Collector):
    """Every cluster's latest read as gauges, with each group's input-topic lag from the evaluator, at scrape time."""

    def __init__(self, board: StreamsBoard, service: LagReader) -> None:
        self.board = board
        self.service = service

    def collect(self) -> Iterator[GaugeMetricFamily]:
        def gauge(name: str, text: str, labels: list[str] = _GROUP) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"kafka_pulse_streams_group_{name}", text, labels=labels)

        status = gauge(
            "status",
            "Streams-group verdict: 2 NOT_READY (topics its topology needs are missing), 1 STALE_TOPOLOGY (a member "
            "runs an older topology epoch than the group's), 0 OK, -1 UNKNOWN (not described).",
        )
        state = gauge(
            "state",
            "1 for a streams group's coordinator state (NotReady, Assigning, Reconciling, Stable, Empty, Dead; "
            "Unknown when not described).",
            [*_GROUP, "state"],
        )
        group_epoch = gauge("epoch", "The streams group's epoch.")
        target_epoch = gauge("target_assignment_epoch", "The epoch of the streams group's target assignment.")
        topology_epoch = gauge(
            "topology_epoch", "The epoch of the streams group's initialised topology; absent before one is set."
        )
        members = gauge("members", "Members (Kafka Streams clients) of a streams group.")
        stale = gauge("stale_topology_members", "Members whose topology epoch is below the streams group's.")
        lag = gauge(
            "input_lag",
            "The lag evaluator's total lag of a streams group over its committed input partitions (the same group "
            "as kafka_pulse_lag_*'s group label); absent while the evaluator has no commit of it.",
        )
        lag_status = gauge(
            "input_lag_status",
            "The lag evaluator's status of a streams group's input partitions (Burrow's: 1 OK, 2 WARN, 3 ERR; "
            "0 NOTFOUND, -1 UNKNOWN).",
        )
        read_ok = GaugeMetricFamily(
            "kafka_pulse_streams_groups_read_complete",
            "1 when the last read of a cluster's streams groups described every group, 0 when it failed or was cut "
            "short.",
            labels=["cluster"],
        )
        now_ms = self.service.clock_ms()
        for cluster, reading in sorted(self.board.latest().items()):
            read_ok.add_metric([cluster], 0.0 if reading.reason else 1.0)
            names = [g.group for g in reading.groups]
            verdicts = {s.group: s for s in self.service.group_statuses(cluster, names, now_ms)} if names else {}
            for g in reading.groups:
                labels = [cluster, g.group]
                status.add_metric(labels, float(g.status))
                state.add_metric([*labels, g.state], 1.0)
                members.add_metric(labels, float(len(g.members)))
                stale.add_metric(labels, float(len(g.stale_members)))
                if g.group_epoch is not None:
                    group_epoch.add_metric(labels, float(g.group_epoch))
                if g.assignment_epoch is not None:
                    target_epoch.add_metric(labels, float(g.assignment_epoch))
                if g.topology_epoch is not None:
                    topology_epoch.add_metric(labels, float(g.topology_epoch))
                verdict = verdicts.get(g.group)
                if verdict is not None:
                    lag_status.add_metric(labels, float(verdict.status))
                    if verdict.partitions:
                        lag.add_metric(labels, float(verdict.totallag))
        yield from (status, state, group_epoch, target_epoch, topology_epoch, members, stale, lag, lag_status, read_ok)
