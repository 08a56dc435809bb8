"""The /metrics text of the `kafka-pulse run` listening on `http.listen`, read once per check through the one
outbound HTTP client (pulse/http/client.py): the `self`, slow-broker and noisy-neighbour lines all parse that one
answer, so a check costs the run one scrape, not three.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from typing import TypeVar

from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.facts import FailureKind, NotAvailable, ProbeFailed
from pulse.config import HttpConfig, split_host_port
from pulse.config.outbound import HttpClientConfig

SHARE, CAP_S = 0.2, 1.0
"""Of the check's budget, what reading the local /metrics may take (it answers in milliseconds)."""

RunText = str | NotAvailable | ProbeFailed
"""The run's /metrics text, or why there is none."""
T = TypeVar("T")


def metrics_url(http: HttpConfig) -> str:
    return f"{'https' if http.tls is not None else 'http'}://{http.listen}/metrics"


def own_certificate(http: HttpConfig) -> ssl.SSLContext | None:
    """Our own listener's certificate as the one trusted (often self-signed, named for another host than the
    loopback address it listens on, so the host name is not checked); None without TLS."""
    if http.tls is None:
        return None
    context = ssl.create_default_context(cafile=str(http.tls.cert_file))
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # the served certificate itself is the anchor, CA-signed too
    context.check_hostname = False
    return context


def nothing_listens(http: HttpConfig, timeout_s: float) -> bool:
    """True when `http.listen` refuses a TCP connection: no run there, known without importing the HTTP client
    (httpx is a third of a check's imports, and most checks run with no `run` beside them)."""
    host, port = split_host_port(http.listen)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:  # a timeout or an unreachable host: the HTTP client says what it is
        return False


def read_run_metrics(http: HttpConfig, deadline: Deadline) -> RunText:
    """One GET of the run's /metrics with its login and TLS: the text, NotAvailable when nothing listens there,
    ProbeFailed when something answers badly."""
    url = metrics_url(http)
    if nothing_listens(http, deadline.share(SHARE, cap_s=CAP_S)):
        return NotAvailable(f"no kafka-pulse run answers on {url}")
    import httpx  # imported here, on the reading thread: the check's clock counts imports from process start

    from pulse.http.client import outbound_client

    login = HttpClientConfig(basic_auth=http.basic_auth)
    try:
        with outbound_client(login, deadline.share(SHARE, cap_s=CAP_S), verify=own_certificate(http)) as client:
            response = client.get(url)
    except httpx.ConnectError as exc:
        if _tls_failure(exc):  # something listens there, but its certificate is not the one configured
            return ProbeFailed(FailureKind.ERROR, f"{url}: TLS handshake failed ({exc})"[:300])
        return NotAvailable(f"no kafka-pulse run answers on {url}")
    except httpx.HTTPError as exc:
        return ProbeFailed(FailureKind.ERROR, f"{url}: {type(exc).__name__}")
    if response.status_code != 200:
        return ProbeFailed(FailureKind.REFUSED, f"{url}: HTTP {response.status_code}")
    return response.text


def _tls_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class RunMetrics:
    """The run's /metrics, read at the first `text()` call; callers on other threads wait for that one read and
    get the same answer (the check's sections are read in parallel)."""

    def __init__(self, http: HttpConfig, deadline: Deadline) -> None:
        self.http = http
        self.deadline = deadline
        self.reads = 0
        """GETs made (one at most)."""
        self._lock = threading.Lock()
        self._text: RunText | None = None

    @property
    def url(self) -> str:
        return metrics_url(self.http)

    def text(self) -> RunText:
        with self._lock:
            if self._text is None:
                self.reads += 1
                self._text = read_run_metrics(self.http, self.deadline)
            return self._text

    def parsed(self, parse: Callable[[str], T]) -> T | NotAvailable | ProbeFailed:
        """What `parse` makes of the text, or why there is none: the one way the `self`, slow-broker and
        noisy-neighbour lines read it, a text `parse` rejects (ValueError) being a failed read."""
        text = self.text()
        if not isinstance(text, str):
            return text
        try:
            return parse(text)
        except ValueError as exc:
            return ProbeFailed(FailureKind.ERROR, f"{self.url}: not Prometheus text ({exc})"[:300])
