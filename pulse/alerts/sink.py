"""Delivery to Alertmanager's v2 API: `AlertSink` posts to /api/v2/alerts and keeps what it cannot post in a
bounded on-disk spool (`AlertSpool`) while Alertmanager is away; `AlertSender` is the seam components deliver through.

One sink per process, shared by every component that alerts (slo/, lag/); docs/alerting.md explains the contract.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, Self

from pulse.alerts.message import Alert, supersede, utc_now
from pulse.alerts.spool import CorruptLine, Spool, SpoolContents, Trimmed
from pulse.config import AlertingConfig, HttpClientConfig
from pulse.errors import ConfigError
from pulse.private_files import Opener

if TYPE_CHECKING:  # httpx (about 14 MB resident) is imported when a sink is made: `kafka-pulse lag` without
    import httpx  # incidents never loads it for the `AlertSink` name its command imports

_LOG = logging.getLogger(__name__)


# --- the on-disk spool (pulse/alerts/spool.py holds the file handling) -----------------------------------------

SPOOL_FORMAT = 1
"""`v` of each spool line: {"v": 1, "spooled_at": RFC 3339, "alert": <postableAlert JSON>}."""


class AlertCodec:
    """Spool lines of `Alert`s; an incident is its labels and startsAt (see `supersede`)."""

    def encode(self, item: Alert, spooled_at: datetime) -> bytes:
        entry = {"v": SPOOL_FORMAT, "spooled_at": spooled_at.isoformat(), "alert": item.to_api()}
        return (json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n").encode()

    def decode(self, line: bytes) -> Alert:
        entry = json.loads(line)
        if not isinstance(entry, dict) or entry.get("v") != SPOOL_FORMAT or "alert" not in entry:
            raise ValueError(f'not a spool entry of format {SPOOL_FORMAT} ({{"v": 1, "alert": ...}})')
        return Alert.model_validate(entry["alert"])

    def incident(self, item: Alert) -> Hashable:
        return (item.identity, item.starts_at)


class AlertSpool(Spool[Alert]):
    """Alerts waiting for Alertmanager (pulse/alerts/spool.py's `Spool` of `Alert`s)."""

    def __init__(self, directory: Path, max_bytes: int, opener: Opener = os.open) -> None:
        super().__init__(directory, max_bytes, AlertCodec(), opener)


# --- delivery -----------------------------------------------------------------------------------------------------

DropReason = Literal["overflow", "corrupt", "rejected", "spool_error"]


@dataclass
class SinkStats:
    """Counters since this sink was created; exported by `AlertSinkCollector` (docs/metrics.md, Alerting)."""

    sent: int = 0
    """Alerts Alertmanager accepted (2xx), live or from the spool."""
    failed: int = 0
    """Alerts in POSTs that failed (refused, timeout, 5xx, other non-2xx); they went to or stayed in the spool.
    A spooled alert counts again at each failed retry."""
    spooled: int = 0
    """Alerts written to the spool."""
    superseded: int = 0
    """Spooled states replaced by a newer state of the same incident before delivery (not a loss)."""
    dropped: dict[DropReason, int] = field(
        default_factory=lambda: {"overflow": 0, "corrupt": 0, "rejected": 0, "spool_error": 0}
    )
    """Alerts lost: the spool's byte bound (oldest first), unreadable spool lines, refused by Alertmanager (400),
    or not written because the spool could not be (disk full, permissions)."""
    spool_entries: int = 0
    spool_bytes: int = 0
    spool_errors: int = 0
    """Spool operations that failed (directory missing and not re-creatable, read-only, full, unreadable); the
    alerts of such a call were posted live, and those Alertmanager did not take are in `dropped["spool_error"]`."""
    last_success_s: float | None = None
    """Unix time of the last 2xx from Alertmanager."""


@dataclass(frozen=True)
class SendResult:
    """What one `send` or `flush` did."""

    delivered: int
    """Alerts Alertmanager accepted in this call (spooled ones included)."""
    spooled: int
    """Alerts waiting in the spool after this call."""
    dropped: int = 0
    """Alerts lost in this call (overflow, corrupt spool lines, rejected)."""


class AlertSender(Protocol):
    """What a component needs from `AlertSink` to deliver its alerts; tests may pass another sender."""

    def send(self, alerts: Sequence[Alert]) -> SendResult: ...


class AlertSink:
    """Posts alerts to Alertmanager's v2 API; whatever cannot be posted waits in an `AlertSpool` and goes first,
    in order, at the next `send` or `flush` - also from a new sink on the same directory after a restart.

    A caller is blocked for at most about one `timeout_s` per call while Alertmanager is unreachable: after a
    failure, `send` spools without trying the network for `retry_after_s`. Thread-safe; share one per process.
    Delivery is at-least-once (a crash between a POST and the spool rewrite repeats it; Alertmanager dedups).
    """

    batch_size = 500
    """Alerts per POST when draining the spool."""

    def __init__(
        self,
        url: str,
        spool_dir: Path,
        max_spool_bytes: int = 16 * 1024 * 1024,
        timeout_s: float = 5.0,
        retry_after_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        opener: Opener = os.open,
        login: HttpClientConfig | None = None,
    ) -> None:
        """`opener` opens the spool's files (`os.open`); fault tests pass one that fails like a full disk. `login`:
        Alertmanager's basic auth or bearer token and CA file (else a `user:password@` in `url` logs in)."""
        self.url = url.rstrip("/")
        self.spool = AlertSpool(spool_dir, max_spool_bytes, opener)
        self._lock = threading.Lock()
        self._spool_failing = False
        self.retry_after_s = retry_after_s
        self.stats = SinkStats()
        self._monotonic = monotonic
        self._retry_at: float | None = None
        from pulse.http.client import outbound_client

        self._client = outbound_client(login, timeout_s, transport=transport)
        with self._spool_access() as usable:
            if usable:
                self._read_spool()
                self._note_spool()

    @classmethod
    def from_config(cls, config: AlertingConfig, state_dir: Path) -> AlertSink:
        """The sink `config` describes; the spool defaults to `<state_dir>/alert-spool`."""
        if config.alertmanager_url is None:
            raise ConfigError("alerting.alertmanager_url: required to send alerts")
        return cls(
            config.alertmanager_url,
            config.spool_dir or state_dir / "alert-spool",
            max_spool_bytes=config.spool_max_bytes,
            timeout_s=config.timeout_s,
            retry_after_s=config.retry_after_s,
            login=config,
        )

    def send(self, alerts: Sequence[Alert]) -> SendResult:
        """Deliver spooled alerts, then `alerts`, in order; what Alertmanager does not take is spooled.

        Call it every cycle, with an empty list if nothing is open, so the spool drains when Alertmanager returns.
        """
        with self._lock, self._spool_access() as usable:
            if not usable:
                return self._deliver_live(alerts)
            if self._retry_at is not None and self._monotonic() < self._retry_at:
                # Alertmanager failed moments ago: do not make the caller wait for another timeout.
                dropped = self._store(lambda: self.spool.append(alerts, utc_now()), len(alerts))
                self._note_spool()
                return SendResult(0, self.spool.entries, dropped)
            return self._drain(alerts)

    def flush(self) -> SendResult:
        """Deliver the spool now (ignoring the retry pause); what fails stays spooled."""
        with self._lock, self._spool_access() as usable:
            return self._drain([]) if usable else SendResult(0, self.spool.entries)

    def pending(self) -> list[Alert]:
        """The alerts waiting in the spool, oldest first."""
        with self._lock, self._spool_access() as usable:
            return self._read_spool().alerts if usable else []

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals (called with the spool lock held) -----------------------------------------------------------
    @contextlib.contextmanager
    def _spool_access(self) -> Iterator[bool]:
        """The spool's lock; False (counted, logged) when the spool cannot be used now, so delivery goes live."""
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self.spool.locked())
            except OSError as exc:
                self._spool_error("cannot use the spool directory", exc)
                yield False
                return
            yield True

    def _deliver_live(self, alerts: Sequence[Alert]) -> SendResult:
        """Without a spool: post now, whatever the retry pause says (waiting would lose them for sure); what
        Alertmanager does not take is lost, counted as `spool_error`."""
        pending, superseded = supersede(alerts)
        self.stats.superseded += superseded
        delivered, dropped = self._post_in_batches(pending)
        lost = len(pending) - delivered
        if lost:
            _LOG.error("alertmanager %s and the alert spool both failed: %d alerts lost", self.url, lost)
            self.stats.dropped["spool_error"] += lost
        return SendResult(delivered, self.spool.entries, dropped + lost)

    def _post_in_batches(self, pending: Sequence[Alert]) -> tuple[int, int]:
        """Post `pending` in order, batch by batch, until Alertmanager fails: (alerts it took or refused, refused);
        a refused batch is counted as dropped, since sending it again would be refused again."""
        delivered = rejected = 0
        while delivered < len(pending):
            batch = pending[delivered : delivered + self.batch_size]
            outcome = self._post(batch)
            if outcome == "failed":
                break
            if outcome == "rejected":
                self.stats.dropped["rejected"] += len(batch)
                rejected += len(batch)
            delivered += len(batch)
        return delivered, rejected

    def _spool_error(self, what: str, exc: OSError) -> None:
        """Count a failed spool operation; log the first of a streak (the spool is tried again every call)."""
        self.stats.spool_errors += 1
        if not self._spool_failing:
            _LOG.error("alert spool %s: %s (%s); alerts are posted live until it works", self.spool.path, what, exc)
        self._spool_failing = True

    def _spool_ok(self) -> None:
        if self._spool_failing:
            _LOG.info("alert spool %s works again", self.spool.path)
        self._spool_failing = False

    def _drain(self, new: Sequence[Alert]) -> SendResult:
        now = utc_now()
        held = self._read_spool() if self.spool.size_bytes() else SpoolContents([], [])
        dropped = self._report_corrupt(held.corrupt)
        pending, superseded = supersede(held.alerts + list(new))
        self.stats.superseded += superseded
        delivered, rejected = self._post_in_batches(pending)
        dropped += rejected
        rest = pending[delivered:]
        fresh = {id(a) for a in new}
        new_in_rest = sum(1 for a in rest if id(a) in fresh)
        # Rewrite only when something was read back; otherwise the undelivered new alerts are merely appended.
        if held.alerts or held.corrupt:
            dropped += self._store(lambda: self.spool.replace(rest, now), new_in_rest)
        else:
            dropped += self._store(lambda: self.spool.append(rest, now), new_in_rest)
        self._note_spool()
        if delivered and held.alerts and not rest:
            _LOG.info("alertmanager %s: delivered the alert spool (%d alerts waited)", self.url, len(held.alerts))
        return SendResult(delivered, self.spool.entries, dropped)

    def _post(self, batch: Sequence[Alert]) -> Literal["sent", "rejected", "failed"]:
        import httpx  # loaded by the constructor's client already

        body = [a.to_api() for a in batch]
        try:
            response = self._client.post(f"{self.url}/api/v2/alerts", json=body)
        except httpx.HTTPError as exc:
            return self._failed(batch, f"{type(exc).__name__}: {exc}")
        if response.is_success:
            self.stats.sent += len(batch)
            self.stats.last_success_s = time.time()
            if self._retry_at is not None:
                _LOG.info("alertmanager %s is reachable again", self.url)
            self._retry_at = None
            return "sent"
        if response.status_code in (400, 422):
            # Alertmanager stores the valid alerts of a batch and answers 400 naming the invalid ones; retrying
            # the same batch could never succeed, so it is dropped (counted) rather than blocking the spool.
            _LOG.error(
                "alertmanager %s refused %d alerts: HTTP %d: %s",
                self.url,
                len(batch),
                response.status_code,
                response.text.strip()[:500],
            )
            return "rejected"
        return self._failed(batch, f"HTTP {response.status_code}: {response.text.strip()[:200]}")

    def _failed(self, batch: Sequence[Alert], why: str) -> Literal["failed"]:
        if self._retry_at is None:
            _LOG.warning("alertmanager %s: %s; spooling alerts in %s", self.url, why, self.spool.path)
        self.stats.failed += len(batch)
        self._retry_at = self._monotonic() + self.retry_after_s
        return "failed"

    def _read_spool(self) -> SpoolContents[Alert]:
        """The spool's contents; an unreadable spool file is logged and treated as empty (it is not deleted)."""
        try:
            return self.spool.read()
        except OSError as exc:
            self._spool_error("cannot read; its alerts wait until it can be read", exc)
            return SpoolContents([], [])

    def _store(self, write: Callable[[], Trimmed], new: int) -> int:
        """Run a spool write for `new` caller alerts; returns how many alerts were lost. A write that fails
        (disk full, permissions) loses the caller's alerts - logged and counted - instead of failing the caller;
        on a failed rewrite the previous spool file stays as it was."""
        try:
            trimmed = write()
        except OSError as exc:
            self._spool_error(f"cannot write: {new} alerts lost", exc)
            self.stats.dropped["spool_error"] += new
            return new
        self._spool_ok()
        self.stats.spooled += new
        return self._count_trimmed(trimmed)

    def _report_corrupt(self, corrupt: Sequence[CorruptLine]) -> int:
        for line in corrupt:
            _LOG.error("alert spool %s: line %d skipped: %s", self.spool.path, line.line_no, line.reason)
        self.stats.dropped["corrupt"] += len(corrupt)
        return len(corrupt)

    def _count_trimmed(self, trimmed: Trimmed) -> int:
        self._report_corrupt(trimmed.corrupt)
        if trimmed.overflow:
            _LOG.warning(
                "alert spool %s is full (%d bytes): dropped the %d oldest alerts",
                self.spool.path,
                self.spool.max_bytes,
                trimmed.overflow,
            )
        self.stats.superseded += trimmed.superseded
        self.stats.dropped["overflow"] += trimmed.overflow
        return trimmed.overflow + len(trimmed.corrupt)

    def _note_spool(self) -> None:
        self.stats.spool_entries = self.spool.entries
        self.stats.spool_bytes = self.spool.size_bytes()
