"""`http.request_timeout_s` is the deadline every listener built from config enforces: 30 s unless set, refused
when not positive, and a request dripped past it is answered 408 naming it. In process on loopback; the same
deadline on every command's real listener is tests/integration/app/test_listeners.py."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pulse.config import HttpConfig
from pulse.http import HttpServer
from pulse.ports import free_ports
from tests.support.http_drip import drip


def test_the_deadline_defaults_to_30_s_and_must_be_positive() -> None:
    assert HttpConfig().request_timeout_s == 30.0
    for bad in (0, -1, 7200):
        with pytest.raises(ValidationError, match="request_timeout_s"):
            HttpConfig.model_validate({"request_timeout_s": bad})


def test_a_listener_from_config_answers_408_at_the_configured_deadline() -> None:
    """0.5 s configured, a byte sent every 0.2 s: only the configured deadline can end the request this early."""
    (port,) = free_ports(1)
    server = HttpServer.from_config(HttpConfig(listen=f"127.0.0.1:{port}", request_timeout_s=0.5)).start()
    try:
        # up to 5 s of dripping: ten deadlines, a sixth of the default
        answer = drip(port, b"GET /metrics HTTP/1.1\r\nX-Slow: ", 0.2, 25)
    finally:
        server.stop()
    assert answer.startswith(b"HTTP/1.0 408 "), answer[:200]
    assert b"the request was not complete within 0.5 s" in answer
