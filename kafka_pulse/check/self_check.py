"""The check's `self` section: is the `kafka-pulse run` on `http.listen` still doing its work? Read from that
process's /metrics (pulse/self_health.py's families): a component whose last successful cycle is older than
3 intervals is WARN; no process there is not available (INFO), never a verdict on Kafka.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from datetime import datetime

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import FailureKind, NotAvailable, ProbeFailed
from kafka_pulse.check.verdict import Section, Status
from pulse.config import HttpConfig
from pulse.self_health import STALE_INTERVALS, ComponentHealth, parse_self_health

SECTION = "self"
SHARE, CAP_S = 0.2, 1.0
"""Of the check's budget, what reading the local /metrics may take (it answers in milliseconds)."""


def read_self_health(http: HttpConfig, deadline: Deadline) -> list[ComponentHealth] | NotAvailable | ProbeFailed:
    """The components of the `run` listening on `http.listen`, with its login and TLS."""
    text = read_run_metrics(http, deadline)
    if not isinstance(text, str):
        return text
    url = _metrics_url(http)
    try:
        components = parse_self_health(text)
    except ValueError as exc:
        return ProbeFailed(FailureKind.ERROR, f"{url}: not Prometheus text ({exc})"[:300])
    if not components:
        return NotAvailable(f"{url} is not a kafka-pulse run with self-health (an older version, or another command)")
    return components


def _metrics_url(http: HttpConfig) -> str:
    return f"{'https' if http.tls is not None else 'http'}://{http.listen}/metrics"


def read_run_metrics(http: HttpConfig, deadline: Deadline) -> str | NotAvailable | ProbeFailed:
    """The /metrics text of the `run` listening on `http.listen`, with its login and TLS (the `self` section and
    the noisy-neighbour lines read it)."""
    import httpx

    url = _metrics_url(http)
    auth = None
    if http.basic_auth is not None:
        auth = httpx.BasicAuth(http.basic_auth.username, http.basic_auth.password.get_secret_value())
    verify: ssl.SSLContext | bool = True
    if http.tls is not None:  # our own listener: trust the certificate it serves (often self-signed)
        verify = ssl.create_default_context(cafile=str(http.tls.cert_file))
        verify.check_hostname = False
    try:
        with httpx.Client(timeout=deadline.share(SHARE, cap_s=CAP_S), trust_env=False, verify=verify) as client:
            response = client.get(url, auth=auth)
    except httpx.ConnectError:
        return NotAvailable(f"no kafka-pulse run answers on {url}")
    except httpx.HTTPError as exc:
        return ProbeFailed(FailureKind.ERROR, f"{url}: {type(exc).__name__}")
    if response.status_code != 200:
        return ProbeFailed(FailureKind.REFUSED, f"{url}: HTTP {response.status_code}")
    return response.text


def judge_self(facts: Sequence[ComponentHealth] | NotAvailable | ProbeFailed, now: datetime) -> Section:
    """WARN naming every stale component; OK when all are fresh; INFO when there is nothing to read."""
    if isinstance(facts, NotAvailable):
        return Section(SECTION, Status.INFO, "not available", (facts.reason,))
    if isinstance(facts, ProbeFailed):
        return Section(SECTION, Status.INFO, "not read", (facts.reason,))
    now_s = now.timestamp()
    stale = [c for c in facts if c.is_stale(now_s)]
    details = {
        "components": [
            {"component": c.component, "interval_s": c.interval_s, "last_success_s": c.last_success_s,
             "age_s": round(c.age_s(now_s), 3), "stale": c.is_stale(now_s)}
            for c in facts
        ],
        "stale_after_intervals": STALE_INTERVALS,
    }  # fmt: skip
    if stale:
        summary = f"{len(stale)} of {len(facts)} components stale: {', '.join(c.component for c in stale)}"
        return Section(SECTION, Status.WARN, summary, tuple(c.describe(now_s) for c in stale), details=details)
    return Section(SECTION, Status.OK, f"{len(facts)} components fresh", (), details=details)
