"""Burrow v3 JSON, rendered by pure functions from our frozen messages (served by `serve/routes.py`, printed by replay).

Field names are Burrow's (`core/protocol/evaluator.go`, `storage.go`, `httpserver/structs.go`):
`current_lag` in statuses but `current-lag` in the consumer detail, `observedAt` only from Burrow 1.3.3 on (so not
in burrow-1.2 mode; we have no separate observation time and report the commit timestamp). Our extensions are
extra keys (`reason`, `lag_seconds`; `exact_lag_seconds`, `beyond_page_cache` and `page_cache_window_s` when those
features are on; `noisy_neighbour` when one is diagnosed) that Burrow clients ignore.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lag.protocol import CommitPoint, GroupStatus, Mode, NoisyNeighbour, PartitionVerdict, Status
from pulse.redact import redact_url

Json = dict[str, Any]


@dataclass(frozen=True)
class BurrowModules:
    """The modules Burrow's `/v3/config/...` and `/v3/kafka/{cluster}` describe, fixed once the runner is built and
    given to the routes at construction."""

    clusters: Mapping[str, Json] = field(default_factory=dict)
    """Per cluster, the cluster module (`/v3/kafka/{cluster}`, `/v3/config/cluster/{name}`)."""
    consumers: Mapping[str, Json] = field(default_factory=dict)
    """Per cluster, the consumer module (`/v3/config/consumer/{name}`)."""
    notifiers: Mapping[str, Json] = field(default_factory=dict)
    """Notifier modules by name (`/v3/config/notifier/{name}`)."""
    main: Mapping[str, Json] = field(default_factory=dict)
    """Sections added to `/v3/config` (general, logging, zookeeper, httpserver)."""


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
    _add_extensions(out, v.exact_lag_seconds, v.beyond_page_cache)
    if v.beyond_page_cache is not None:
        window = v.page_cache_window_s
        out["page_cache_window_s"] = None if window is None or math.isinf(window) else window
    return out


def _add_extensions(out: Json, exact_lag_seconds: float | None, beyond_page_cache: bool | None) -> None:
    """Exact time lag and the page-cache hint, in every mode, only when known (the features are opt-in)."""
    if exact_lag_seconds is not None:
        out["exact_lag_seconds"] = exact_lag_seconds
    if beyond_page_cache is not None:
        out["beyond_page_cache"] = beyond_page_cache


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
        out["reason"] = "; ".join(r for r in (s.reason, *(n.describe() for n in s.noisy_neighbours)) if r)
        out["lag_seconds"] = s.lag_seconds
    _add_extensions(out, s.exact_lag_seconds, s.beyond_page_cache)
    if s.noisy_neighbours:
        out["noisy_neighbour"] = [noisy_neighbour_json(n) for n in s.noisy_neighbours]
    return out


def noisy_neighbour_json(n: NoisyNeighbour) -> Json:
    """One diagnosis in a group's status (every mode, only when there is one; docs/burrow-compat.md)."""
    return {
        "broker": n.broker,
        "topic": n.topic,
        "partitions": list(n.partitions),
        "lag_seconds": n.lag_seconds,
        "page_cache_window_s": n.window_s,
        "produce_latency_ms": n.produce_latency_ms,
        "broker_slow": n.broker_slow,
        "broker_reason": n.broker_reason,
        "why": n.describe(),
    }


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


# -- /v3/config and module details (shapes read from Debian Burrow 1.2.1's answers) ---------------------------------

BURROW_LOG_LEVELS = ("debug", "info", "warn", "error", "panic", "fatal")


def _allowlist_key(mode: Mode) -> str:
    """1.2.1 says `group-whitelist`; Burrow renamed it `group-allowlist` in 1.3.5."""
    return "group-whitelist" if mode == "burrow-1.2" else "group-allowlist"


def storage_module_json(
    mode: Mode, intervals: int, min_distance_s: float, group_allow: str | None, expire_group_s: float
) -> Json:
    """`/v3/config/storage/default`: Burrow's in-memory storage module and its settings."""
    return {
        "class-name": "inmemory",
        "intervals": intervals,
        "min-distance": _whole(min_distance_s),
        _allowlist_key(mode): group_allow or "",
        "expire-group": _whole(expire_group_s),
    }


def evaluator_module_json(mode: Mode, allowed_lag: int, minimum_complete: float) -> Json:
    """`/v3/config/evaluator/default`: Burrow's `caching` evaluator; we cache nothing (expire-cache 0). `mode`,
    `allowed-lag` and `minimum-complete` are extra keys."""
    return {
        "class-name": "caching",
        "expire-cache": 0,
        "mode": mode,
        "allowed-lag": allowed_lag,
        "minimum-complete": minimum_complete,
    }


def client_profile_json(name: str, client_id: str, tls: Json | None = None, sasl: Json | None = None) -> Json:
    """Burrow's `client-profile` object; TLS and SASL profiles without secrets, null when not used."""
    return {"name": name, "client-id": client_id, "kafka-version": "", "tls": tls, "sasl": sasl}


def cluster_module_json(servers: Sequence[str], profile: Json, topic_refresh_s: float, offset_refresh_s: float) -> Json:
    """`/v3/kafka/{cluster}` and `/v3/config/cluster/{name}`."""
    return {
        "class-name": "kafka",
        "servers": list(servers),
        "client-profile": profile,
        "topic-refresh": _whole(topic_refresh_s),
        "offset-refresh": _whole(offset_refresh_s),
    }


def consumer_module_json(
    mode: Mode,
    cluster: str,
    servers: Sequence[str],
    profile: Json,
    group_allow: str | None,
    group_deny: str | None,
    ingestion: str,
) -> Json:
    """`/v3/config/consumer/{name}`. class-name is `kafka` for `__consumer_offsets`, `admin` for Admin API
    ingestion (ours; Burrow has no such class)."""
    out: Json = {
        "class-name": "kafka" if ingestion == "consumer_offsets" else "admin",
        "cluster": cluster,
        "servers": list(servers),
        _allowlist_key(mode): group_allow or "",
    }
    if mode != "burrow-1.2":
        out["group-denylist"] = group_deny or ""
    out |= {
        "zookeeper-path": "",
        "zookeeper-timeout": 0,
        "client-profile": profile,
        "offsets-topic": "__consumer_offsets",
        "start-latest": False,
    }
    return out


def alertmanager_notifier_json(url: str, threshold: int, interval_s: float, send_interval_s: float) -> Json:
    """`/v3/config/notifier/alertmanager`: our notifier in the shape of Burrow's http notifier; the URL is shown
    without its `user:password@` (anyone who can read the API could otherwise log in to Alertmanager)."""
    return {
        "class-name": "alertmanager",
        "url": redact_url(url),
        "threshold": threshold,
        "interval": interval_s,
        "send-interval": send_interval_s,
        "send-close": True,
    }


def main_config_json(address: str, tls: bool, level: str) -> Json:
    """The sections of `/v3/config` (general, logging, zookeeper, httpserver); we need no ZooKeeper."""
    return {
        "general": {"pidfile": "", "stdout-logfile": "", "access-control-allow-origin": ""},
        "logging": {
            "filename": "",
            "max-size": 0,
            "max-backups": 0,
            "max-age": 0,
            "use-local-time": False,
            "use-compression": False,
            "level": level,
        },
        "zookeeper": {"servers": [], "timeout": 0, "root-path": ""},
        "httpserver": {"default": {"address": address, "tls": "default" if tls else "", "timeout": 300}},
    }


def _whole(seconds: float) -> int | float:
    """Burrow's settings are whole seconds; ours may be fractional, shown as they are."""
    return int(seconds) if float(seconds).is_integer() else seconds
