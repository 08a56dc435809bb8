"""A running evaluator's group verdicts read over its Burrow v3 routes (`check --lag-url`): the cluster's consumer
list, then each group's `/status`, through the one outbound client (its login and CA), all within the deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from kafka_pulse.check.consult.run_metrics import own_certificate
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import FailureKind, NotAvailable, ProbeFailed
from kafka_pulse.check.judge.lag_verdicts import GroupVerdict, LagVerdicts, worst_partition
from kafka_pulse.check.judge.share_verdicts import ShareFacts
from pulse.config import HttpConfig
from pulse.config.outbound import HttpClientConfig

if TYPE_CHECKING:
    import httpx

MARGIN_S = 0.1
"""No group's status is asked with less than this left: the section still has to be judged."""
T = TypeVar("T")


def listener_name(url: str) -> str:
    """`url` without a login or trailing slash: what the report names as the source (never the password)."""
    from pulse.http.client import split_userinfo

    return split_userinfo(url.rstrip("/"))[0]


def read_listener_verdicts(url: str, cluster: str, http: HttpConfig, deadline: Deadline) -> LagVerdicts | ProbeFailed:
    """Every group of `cluster` with its status from the listener at `url`. The login is the URL's own
    `user:password@`, else `http.basic_auth` (the login our listener asks); an https listener's certificate is
    trusted through `http.tls` (our own) or the system's CAs."""
    import httpx

    name = listener_name(url)
    connect = _connector(url, http, deadline)
    base = f"/v3/kafka/{quote(cluster, safe='')}/consumer"
    try:
        with connect() as client:
            listing = client.get(base)
            if listing.status_code == 404:
                return ProbeFailed(FailureKind.ERROR, f"{name} has no cluster {cluster!r} (is it evaluating it?)")
            if listing.status_code != 200:
                return ProbeFailed(FailureKind.REFUSED, f"{name}{base}: HTTP {listing.status_code}")
            groups = sorted(str(g) for g in listing.json().get("consumers", []))
            verdicts, unread = _each_group(
                client, groups, lambda g: f"{base}/{quote(g, safe='')}/status", (200, 404), _verdict, deadline
            )
    except httpx.HTTPError as exc:
        return ProbeFailed(FailureKind.UNREACHABLE, f"no answer from {name}: {type(exc).__name__}: {exc}"[:300])
    except ValueError as exc:  # not JSON: something else listens there
        return ProbeFailed(FailureKind.ERROR, f"{name} did not answer Burrow v3 JSON ({exc})"[:300])
    return LagVerdicts(name, tuple(verdicts), tuple(unread))


def _verdict(group: str, status: dict[str, Any]) -> GroupVerdict:
    """One `/status` body: the group's status and, for ERR, the worst of its listed partitions'."""
    name = str(status.get("status") or "NOTFOUND")
    parts = status.get("partitions") or []
    worst = worst_partition(str(p.get("status")) for p in parts) if name == "ERR" else None
    return GroupVerdict(group, name, worst, int(status.get("totallag") or 0), str(status.get("reason") or ""))


def read_listener_shares(
    url: str, cluster: str, http: HttpConfig, deadline: Deadline
) -> ShareFacts | ProbeFailed | NotAvailable:
    """The share groups of `cluster` as the listener at `url` judged them (its `/sharegroup` routes), read as
    `read_listener_verdicts` reads the consumer groups; a listener that serves none is NotAvailable (its
    `lag.share_groups.enabled` is off), and a group not read in time makes the read incomplete."""
    import httpx

    from pulse.kafka.share_stall import verdict_from_json

    name = listener_name(url)
    connect = _connector(url, http, deadline)
    base = f"/v3/kafka/{quote(cluster, safe='')}/sharegroup"
    try:
        with connect() as client:
            listing = client.get(base)
            if listing.status_code == 404:
                return NotAvailable(f"{name} judges no share groups of {cluster!r} (lag.share_groups.enabled off)")
            if listing.status_code != 200:
                return ProbeFailed(FailureKind.REFUSED, f"{name}{base}: HTTP {listing.status_code}")
            body = listing.json()
            groups = sorted(str(g) for g in body.get("sharegroups", []))
            reason = str(body.get("reason") or "")[:300]
            verdicts, unread = _each_group(
                client,
                groups,
                lambda g: f"{base}/{quote(g, safe='')}",
                (200,),
                lambda _, s: verdict_from_json(s),
                deadline,
            )
    except httpx.HTTPError as exc:
        return ProbeFailed(FailureKind.UNREACHABLE, f"no answer from {name}: {type(exc).__name__}: {exc}"[:300])
    except ValueError as exc:  # not JSON, or not a share group's body
        return ProbeFailed(FailureKind.ERROR, f"{name} did not answer share-group JSON ({exc})"[:300])
    if unread:
        reason = "; ".join(filter(None, [reason, f"{len(unread)} share group(s) not read in time: {unread[0]}"]))
    return ShareFacts(name, tuple(verdicts), windowed=True, reason=reason)


def _connector(url: str, http: HttpConfig, deadline: Deadline) -> Callable[[], httpx.Client]:
    """Opens the one outbound client on the listener at `url`: the URL's login, else `http.basic_auth`; for https,
    our own certificate (`http.tls`) or the system's CAs. The login and trust are built now, outside the reads'
    error handling; the client when called."""
    from pulse.http.client import outbound_client

    login = HttpClientConfig(basic_auth=http.basic_auth)
    trust = own_certificate(http) if url.startswith("https:") else None
    return lambda: outbound_client(login, deadline.share(0.5), base_url=url.rstrip("/"), verify=trust)


def _each_group(
    client: httpx.Client,
    groups: list[str],
    path_of: Callable[[str], str],
    answered: Container[int],
    parse: Callable[[str, dict[str, Any]], T],
    deadline: Deadline,
) -> tuple[list[T], list[str]]:
    """Each group's `status` body parsed, asked in turn while the deadline leaves `MARGIN_S`; a group not asked in
    time, or answered with a code not in `answered`, is unread."""
    parsed: list[T] = []
    unread: list[str] = []
    for group in groups:
        if deadline.remaining() < MARGIN_S:
            unread.append(group)
            continue
        answer = client.get(path_of(group), timeout=deadline.share(0.9))
        if answer.status_code not in answered:
            unread.append(group)
            continue
        parsed.append(parse(group, answer.json().get("status") or {}))
    return parsed, unread
