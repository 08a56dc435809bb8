"""The Burrow v3 API: every route of Burrow's `httpserver/coordinator.go`, with the messages, status codes and field
names Debian Burrow 1.2.1 answers with (read from the running binary: see test_lag_vs_burrow.py for the side by
side on real groups). The service is fed directly; requests go through the route table (`BurrowApi.routes()` with
Burrow's fallback), and once over HTTP on the one listener of pulse.http. Login, TLS, gzip and misbehaving clients
are the listener's: tests/unit/pulse/test_http_server.py and tests/integration/test_listeners.py."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from lag.serve.burrow_json import BurrowModules, client_profile_json, cluster_module_json, consumer_module_json
from lag.serve.metrics import LagCollector
from lag.serve.routes import BurrowApi, invalid_request
from lag.service import LagService
from pulse.config import LagConfig
from pulse.http import Request, Response, Router
from tests.support.lag_api import serve_lag_api

NOW = 1_700_000_000_000


@pytest.fixture
def api() -> BurrowApi:
    service = LagService(LagConfig(mode="burrow", intervals=3, min_distance_s=1), clock_ms=lambda: NOW)
    profile = client_profile_json("local", "kafka-pulse-lag")
    modules = BurrowModules(
        clusters={"local": cluster_module_json(["127.0.0.1:9092"], profile, 10, 10)},
        consumers={
            "local": consumer_module_json(
                "burrow", "local", ["127.0.0.1:9092"], profile, None, "^console-", "consumer_offsets"
            )
        },
    )
    with service.locked() as store:
        store.add_hwm("local", "t", 0, 100, NOW - 30_000)
        store.add_hwm("local", "t", 1, 100, NOW - 30_000)
        for i in range(3):
            store.add_commit("local", "g", "t", 0, 10, NOW - 30_000 + i * 10_000, NOW)  # stalled with lag
    logger = logging.getLogger("test-lag-api")
    logger.setLevel(logging.INFO)
    return BurrowApi(service, modules, logger)


def handle(api: BurrowApi, method: str, path: str, body: bytes = b"") -> Response:
    request = Request(method, path, body=body, listener="127.0.0.1:8000")
    return Router(api.routes(), invalid_request).handle(request)


def get(api: BurrowApi, path: str, method: str = "GET", body: bytes = b"") -> tuple[int, Any]:
    response = handle(api, method, path, body)
    text = response.body.decode()
    return response.status, (json.loads(text) if text.startswith("{") else text)


def test_admin_and_ready(api: BurrowApi) -> None:
    assert get(api, "/burrow/admin") == (200, "GOOD")
    assert get(api, "/burrow/admin/ready") == (200, "READY")
    service = api.service
    assert isinstance(service, LagService)
    service.ready = False
    assert get(api, "/burrow/admin/ready") == (503, "STARTING")


def test_every_body_carries_error_message_and_request(api: BurrowApi) -> None:
    code, body = get(api, "/v3/kafka")
    assert code == 200
    assert body["error"] is False and body["message"] == "cluster list returned" and body["clusters"] == ["local"]
    assert body["request"]["url"] == "/v3/kafka" and body["request"]["host"]


@pytest.mark.parametrize(
    ("path", "code", "message", "key"),
    [
        ("/v3/kafka/local", 200, "cluster module detail returned", "module"),
        ("/v3/kafka/local/topic", 200, "topic list returned", "topics"),
        ("/v3/kafka/local/topic/t", 200, "topic offsets returned", "offsets"),
        ("/v3/kafka/local/topic/t/consumers", 200, "consumers of topic returned", "consumers"),
        ("/v3/kafka/local/consumer", 200, "consumer list returned", "consumers"),
        ("/v3/kafka/local/consumer/g", 200, "consumer detail returned", "topics"),
        ("/v3/kafka/local/consumer/g/status", 200, "consumer status returned", "status"),
        ("/v3/kafka/local/consumer/g/lag", 200, "consumer status returned", "status"),
        ("/v3/config", 200, "main config returned", "httpserver"),
        ("/v3/config/storage", 200, "module list returned", "modules"),
        ("/v3/config/storage/default", 200, "storage module detail returned", "module"),
        ("/v3/config/evaluator", 200, "module list returned", "modules"),
        ("/v3/config/evaluator/default", 200, "evaluator module detail returned", "module"),
        ("/v3/config/cluster", 200, "module list returned", "modules"),
        ("/v3/config/cluster/local", 200, "cluster module detail returned", "module"),
        ("/v3/config/consumer", 200, "module list returned", "modules"),
        ("/v3/config/consumer/local", 200, "consumer module detail returned", "module"),
        ("/v3/config/notifier", 200, "module list returned", "modules"),
        ("/v3/admin/loglevel", 200, "log level returned", "level"),
        # Burrow 1.2.1's errors, message for message
        ("/v3/kafka/nope", 404, "cluster module not found", None),
        ("/v3/kafka/local/topic/nope", 404, "cluster or topic not found", None),
        ("/v3/kafka/local/consumer/nope", 404, "cluster or consumer not found", None),
        ("/v3/config/cluster/nope", 404, "cluster module not found", None),
        ("/v3/config/notifier/x", 404, "notifier module not found", None),
    ],
)
def test_every_burrow_route(api: BurrowApi, path: str, code: int, message: str, key: str | None) -> None:
    got_code, body = get(api, path)
    assert (got_code, body["message"]) == (code, message)
    assert body["error"] is (code != 200)
    if key is not None:
        assert key in body


def test_status_lists_only_bad_partitions_and_lag_all(api: BurrowApi) -> None:
    status = get(api, "/v3/kafka/local/consumer/g/status")[1]["status"]
    lag = get(api, "/v3/kafka/local/consumer/g/lag")[1]["status"]
    assert status["status"] == "ERR" and [p["status"] for p in status["partitions"]] == ["STALL"]
    assert [p["partition"] for p in lag["partitions"]] == [0, 1]  # partition 1: a placeholder, never committed
    for body in (status, lag):
        assert set(body) >= {"cluster", "group", "status", "complete", "partitions", "partition_count", "maxlag",
                             "totallag"}  # fmt: skip
        assert body["totallag"] == 90 and body["partition_count"] == 2
    assert set(lag["partitions"][0]) >= {"topic", "partition", "owner", "client_id", "status", "start", "end",
                                         "current_lag", "complete"}  # fmt: skip


def test_unknown_group_status_is_burrows_notfound(api: BurrowApi) -> None:
    code, body = get(api, "/v3/kafka/local/consumer/nope/status")
    assert code == 404 and body["error"] is False and body["message"] == "consumer status returned"
    assert body["status"] == {
        "cluster": "local", "group": "nope", "status": "NOTFOUND", "complete": 1, "partitions": [],
        "partition_count": 0, "maxlag": None, "totallag": 0,
    }  # fmt: skip


def test_consumer_detail_has_a_full_window_and_hyphenated_current_lag(api: BurrowApi) -> None:
    partitions = get(api, "/v3/kafka/local/consumer/g")[1]["topics"]["t"]
    assert len(partitions) == 2
    assert len(partitions[0]["offsets"]) == 3 and partitions[0]["current-lag"] == 90
    assert partitions[1]["offsets"] == [None, None, None]


def test_config_modules_use_burrows_keys(api: BurrowApi) -> None:
    main = get(api, "/v3/config")[1]
    assert set(main) >= {"general", "logging", "zookeeper", "httpserver"}
    assert main["logging"]["level"] == "info"
    storage = get(api, "/v3/config/storage/default")[1]["module"]
    assert storage == {"class-name": "inmemory", "intervals": 3, "min-distance": 1, "group-allowlist": "",
                       "expire-group": 604800}  # fmt: skip
    assert get(api, "/v3/config/evaluator/default")[1]["module"]["class-name"] == "caching"
    cluster = get(api, "/v3/config/cluster/local")[1]["module"]
    assert set(cluster) == {"class-name", "servers", "client-profile", "topic-refresh", "offset-refresh"}
    assert set(cluster["client-profile"]) == {"name", "client-id", "kafka-version", "tls", "sasl"}
    consumer = get(api, "/v3/config/consumer/local")[1]["module"]
    assert consumer["offsets-topic"] == "__consumer_offsets" and consumer["group-denylist"] == "^console-"
    assert get(api, "/v3/config/consumer")[1]["modules"] == ["local"]


def test_loglevel_is_read_and_set(api: BurrowApi) -> None:
    assert get(api, "/v3/admin/loglevel", "POST", b'{"level": "debug"}')[1]["message"] == "set log level"
    assert get(api, "/v3/admin/loglevel")[1]["level"] == "debug"
    assert api.logger.level == logging.DEBUG
    code, body = get(api, "/v3/admin/loglevel", "POST", b'{"level": "loud"}')
    assert (code, body["message"]) == (404, "unknown log level")


def test_delete_group_and_topic(api: BurrowApi) -> None:
    assert get(api, "/v3/kafka/local/consumer/g/topic/t", "DELETE")[1]["message"] == "consumer group removed"
    assert get(api, "/v3/kafka/local/consumer/g")[1]["topics"] == {}
    assert get(api, "/v3/kafka/local/consumer/g", "DELETE")[0] == 200
    assert get(api, "/v3/kafka/local/consumer/g")[0] == 404
    assert get(api, "/v3/kafka/local/consumer/never", "DELETE")[0] == 200  # as Burrow 1.2.1 answers


def test_unknown_routes_get_burrows_invalid_request(api: BurrowApi) -> None:
    for method, path in (("GET", "/v3/foo"), ("GET", "/v3/config/zookeeper"), ("POST", "/v3/kafka")):
        response = handle(api, method, path)
        assert response.status == 404 and response.content_type.startswith("text/plain")
        assert json.loads(response.body) == {"error": True, "message": "invalid request type", "result": {}}


def test_main_config_names_the_listener_the_request_came_in_on(api: BurrowApi) -> None:
    assert get(api, "/v3/config")[1]["httpserver"] == {"default": {"address": "127.0.0.1:8000", "tls": "",
                                                                   "timeout": 300}}  # fmt: skip


JSON_BODY = {"Content-Type": "application/json"}


def test_over_http_post_bodies_and_metrics_reach_the_routes(api: BurrowApi) -> None:
    registry = CollectorRegistry()
    registry.register(LagCollector(api.service))
    server = serve_lag_api(api.service, registry, logger=api.logger, allow_unauthenticated_writes=True)
    try:
        with httpx.Client(base_url=server.url, timeout=5, trust_env=False) as http:
            assert http.get("/v3/kafka").json()["clusters"] == ["local"]
            assert http.post("/v3/admin/loglevel", json={"level": "warn"}).json()["message"] == "set log level"
            assert api.logger.level == logging.WARNING
            assert http.post("/v3/admin/loglevel", content=b"{", headers=JSON_BODY).status_code == 400
            assert http.get("/v3/config").json()["httpserver"]["default"]["address"] == server.address
            invalid = http.get("/nowhere")
            assert (invalid.status_code, invalid.json()["message"]) == (404, "invalid request type")
            metrics = http.get("/metrics")
            assert metrics.status_code == 200 and "# HELP kafka_pulse_lag_commits_total" in metrics.text
    finally:
        server.stop()
