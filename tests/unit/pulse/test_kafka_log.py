"""pulse/kafka_log.py: librdkafka's lines are thinned to one per cluster and kind per period, the rest counted."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from pulse.kafka_log import KafkaLogLimiter, limiter_for, log_kind, verdict_settings
from pulse.kafka_log_metrics import KafkaLogCollector
from pulse.names import LIBRDKAFKA_LOGS_METRIC

REFUSED = (
    "FAIL [thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: Connection refused"
)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        pytest.param(REFUSED, "FAIL", id="facility"),
        pytest.param("ERROR [thrd:app]: 1/1 brokers are down", "ERROR", id="error"),
        pytest.param("connection refused", "OTHER", id="no-facility"),
        pytest.param("", "OTHER", id="empty"),
    ],
)
def test_the_kind_is_librdkafkas_facility(line: str, kind: str) -> None:
    assert log_kind(line) == kind


def test_one_line_per_cluster_and_kind_per_period_the_rest_counted(caplog: pytest.LogCaptureFixture) -> None:
    clock = [100.0]
    limiter = KafkaLogLimiter(period_s=60, monotonic=lambda: clock[0])
    registry = CollectorRegistry()
    registry.register(KafkaLogCollector(limiter.snapshot))
    log = limiter.settings("prod")["logger"]
    other = limiter.settings("dr")["logger"]
    with caplog.at_level(logging.INFO, logger="pulse.librdkafka"):
        for _ in range(100):  # 20 a second for 5 s, as against a closed port
            log.log(logging.ERROR, "%s", REFUSED)
            clock[0] += 0.05
        other.log(logging.ERROR, "%s", REFUSED)
        log.log(logging.ERROR, "%s", "ERROR [thrd:app]: 1/1 brokers are down")
        clock[0] += 60
        log.log(logging.ERROR, "%s", REFUSED)

    def count(cluster: str, kind: str, outcome: str) -> float | None:
        return registry.get_sample_value(
            "kafka_pulse_librdkafka_logs_total", {"cluster": cluster, "kind": kind, "outcome": outcome}
        )

    assert (count("prod", "FAIL", "logged"), count("prod", "FAIL", "suppressed")) == (2, 99)
    assert (count("dr", "FAIL", "logged"), count("prod", "ERROR", "logged")) == (1, 1)
    assert len(caplog.records) == 4
    assert caplog.records[-1].getMessage().endswith("(99 more like it in the last 60 s)")
    assert all(r.levelno == logging.WARNING for r in caplog.records)  # a dead broker's chatter is no ERROR


def test_errors_are_limited_by_their_name() -> None:
    class Error:
        def name(self) -> str:
            return "_TRANSPORT"

        def str(self) -> str:
            return "127.0.0.1:9/bootstrap: Connection refused"

        def fatal(self) -> bool:
            return False

    limiter = KafkaLogLimiter()
    callback = limiter.settings("prod")["error_cb"]
    for _ in range(5):
        callback(Error())
    assert limiter.counts == {("prod", "_TRANSPORT", "logged"): 1, ("prod", "_TRANSPORT", "suppressed"): 4}


def test_verdict_clients_are_thinned_and_log_at_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    """`check` and the connection check: their verdict names the failure, librdkafka's lines go to DEBUG."""
    seen: list[object] = []
    settings = verdict_settings("prod", on_error=seen.append)
    caplog.set_level(logging.DEBUG, logger="pulse.librdkafka")
    for _ in range(3):
        settings["logger"].log(logging.ERROR, "FAIL [thrd:%s]: Connection refused", "127.0.0.1:9")
    settings["error_cb"]("an error")
    assert [(r.name, r.levelno) for r in caplog.records] == [("pulse.librdkafka", logging.DEBUG)] * 2
    assert (
        caplog.records[0].getMessage() == "cluster prod: librdkafka FAIL: FAIL [thrd:127.0.0.1:9]: Connection refused"
    )
    assert seen == ["an error"]  # the client's own error handling still gets every error, after counting


def test_one_limiter_and_one_counter_per_registry() -> None:
    """In `run` canary, collectors and lag share a registry: a second family of the same name would be refused."""
    shared, other = CollectorRegistry(), CollectorRegistry()
    first = limiter_for(shared)
    assert limiter_for(shared) is first and limiter_for(other) is not first
    first.settings("prod")["error_cb"]("x")
    assert (
        shared.get_sample_value(
            f"{LIBRDKAFKA_LOGS_METRIC}_total", {"cluster": "prod", "kind": "str", "outcome": "logged"}
        )
        == 1
    )
