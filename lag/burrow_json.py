"""Burrow v3 JSON, rendered by pure functions from our frozen messages (served by `api.py`, printed by replay).

Field names are Burrow's (`core/protocol/evaluator.go`, `storage.go`, `httpserver/structs.go`, research §1.7):
`current_lag` in statuses but `current-lag` in the consumer detail, `observedAt` only from Burrow 1.3.3 on (so not
in burrow-1.2 mode; we have no separate observation time and report the commit timestamp). Our extensions are
extra keys (`reason`, `lag_seconds`) that Burrow clients ignore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lag.status import CommitPoint, GroupStatus, Mode, PartitionVerdict, Status

Json = dict[str, Any]


def commit_json(point: CommitPoint | None, mode: Mode) -> Json | None:
    if point is None:
        return None
    out: Json = {"offset": point.offset, "timestamp": point.timestamp_ms}
    if mode != "burrow-1.2":
        out["observedAt"] = point.timestamp_ms
    out["lag"] = point.lag if point.lag is not None or mode != "burrow-1.2" else 0
    return out


def partition_json(v: PartitionVerdict, mode: Mode) -> Json:
    out: Json = {
        "topic": v.topic,
        "partition": v.partition,
        "owner": v.owner,
        "client_id": v.client_id,
        "status": v.status.name,
        "start": commit_json(v.start, mode),
        "end": commit_json(v.end, mode),
        "current_lag": v.current_lag,
        "complete": v.complete,
    }
    if mode == "enhanced":
        out["reason"] = v.reason
        out["lag_seconds"] = v.lag_seconds
    return out


def group_status_json(s: GroupStatus, mode: Mode, show_all: bool = True) -> Json:
    """The `status` object of `/lag` (show_all) or `/status` (only partitions worse than OK)."""
    parts = [p for p in s.partitions if show_all or p.status > Status.OK]
    out: Json = {
        "cluster": s.cluster,
        "group": s.group,
        "status": s.status.name,
        "complete": s.complete,
        "partitions": [partition_json(p, mode) for p in parts],
        "partition_count": s.partition_count,
        "maxlag": partition_json(s.maxlag, mode) if s.maxlag is not None else None,
        "totallag": s.totallag,
    }
    if mode == "enhanced":
        out["reason"] = s.reason
        out["lag_seconds"] = s.lag_seconds
    return out


def envelope(message: str, url: str, host: str, error: bool = False, **payload: Any) -> Json:
    """Every v3 body: `error`, `message`, the payload keys, and `request: {url, host}`."""
    return {"error": error, "message": message, **payload, "request": {"url": url, "host": host}}


def consumer_detail_json(
    topics: dict[str, Sequence[tuple[Sequence[CommitPoint | None], str, str, int]]], mode: Mode
) -> Json:
    """`/v3/kafka/{cluster}/consumer/{group}`: per topic, per partition the window (nulls first), owner and lag.

    Each partition is (window of `intervals` points or None, owner, client_id, current lag).
    """
    return {
        topic: [
            {
                "offsets": [commit_json(p, mode) for p in window],
                "owner": owner,
                "client_id": client_id,
                "current-lag": lag,
            }
            for window, owner, client_id, lag in parts
        ]
        for topic, parts in topics.items()
    }
