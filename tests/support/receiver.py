"""An in-process HTTP endpoint on loopback that stands in for PagerDuty's Events API v2 and for generic webhooks,
at the end of the alert path (kafka-pulse -> Alertmanager -> here); it records every request for tests to await.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from devstack.services import ServiceTimeout
from pulse.ports import LOOPBACK

PAGERDUTY_PATH = "/v2/enqueue"


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as it arrived; `json` is None when the body is empty or not JSON."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any
    received_at: float = field(default_factory=time.time)
    """Unix time in seconds."""


class _Handler(BaseHTTPRequestHandler):
    server: _RecordingServer

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = ReceivedRequest(self.command, self.path, dict(self.headers.items()), body, parsed)
        self.server.owner._record(request)
        if self.command == "POST" and self.path.split("?")[0] == PAGERDUTY_PATH:
            # PagerDuty answers 202 with the event's dedup key (generated when the event carries none).
            dedup_key = parsed.get("dedup_key") if isinstance(parsed, dict) else None
            answer = {"status": "success", "message": "Event processed", "dedup_key": dedup_key or uuid.uuid4().hex}
            self._reply(202, answer)
        else:
            self._reply(200, {"status": "success"})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a test's output should not fill with one access-log line per notification."""


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: HttpReceiver) -> None:
        self.owner = owner
        super().__init__((LOOPBACK, 0), _Handler)


class HttpReceiver:
    """A threaded stdlib HTTP server on 127.0.0.1:<free port>, running in this process.

    POST /v2/enqueue answers 202 like PagerDuty Events API v2; every other request answers 200. All requests are
    kept in arrival order; `wait_for` blocks on a condition variable, not a sleep loop.
    """

    def __init__(self) -> None:
        self._requests: list[ReceivedRequest] = []
        self._changed = threading.Condition()
        self._server: _RecordingServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._server = _RecordingServer(self)
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket; safe to call twice."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("HttpReceiver is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pagerduty_url(self) -> str:
        """Where a PagerDuty client (Alertmanager's `pagerduty_configs.url`) should send events."""
        return self.url + PAGERDUTY_PATH

    def _record(self, request: ReceivedRequest) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    @property
    def requests(self) -> list[ReceivedRequest]:
        """A snapshot of everything received so far."""
        with self._changed:
            return list(self._requests)

    def mark(self) -> int:
        """The number of requests so far; pass it as `after` to ignore what earlier tests caused."""
        with self._changed:
            return len(self._requests)

    def wait_for(
        self, predicate: Callable[[ReceivedRequest], bool], timeout_s: float = 30.0, after: int = 0
    ) -> ReceivedRequest:
        """The first request (from index `after` on) that matches `predicate`, waiting up to `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for request in self._requests[after:]:
                    if predicate(request):
                        return request
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = [f"{r.method} {r.path}" for r in self._requests[after:]]
                    raise ServiceTimeout(
                        f"http receiver: no matching request after {timeout_s:.0f} s; received {seen}"[:2000]
                    )
                self._changed.wait(remaining)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
