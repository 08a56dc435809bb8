"""The noisy-neighbour case on the real 3-node cluster: a group reading a large backlog from its start (far beyond
the page-cache window) on partitions broker 2 leads, producers writing another topic broker 2 leads, and broker 2's
produce latency raised for real by SIGSTOP/SIGCONT cycling (`devstack/stutter.py`). The lag runner, given the same
board the slow-broker detector publishes to in `run`, must name the group, its topic and broker 2 on /metrics, in
the lag API's status and in `check`.

The board is filled from a real canary's measured per-broker produce latency (tests/support/canary_latency_board.py,
one stated rule: p90 above 2x the peers' and 50 ms), not from the collectors' detector, so this test depends on
measurements only, never on invented numbers. The canary's topic has one replica per partition here, so a probe
waits on its leader only and a stopped broker does not slow its peers' probes as an acks=all follower.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devstack.noisy_neighbour import NoisyNeighbourWorkload, NoisyPlan
from devstack.runtime import ensure_runtime, ensure_tools
from devstack.services import poll
from devstack.stutter import StutterPlan, stutter_node
from kafka_pulse.check.deadline import Deadline
from kafka_pulse.check.health_check import run_check
from kafka_pulse.clusters import DEV_CLUSTER_NAME
from lag.runner import LagRunner
from pulse.broker_health import BrokerHealthBoard
from pulse.config import parse_config
from pulse.paths import cache_dir
from tests.fixtures.kafka import KafkaHandle
from tests.integration.canary_support import running_canary
from tests.support.canary_latency_board import CanaryLatencyBoard
from tests.support.lag_api import serve_lag_api

pytestmark = pytest.mark.integration

BROKER = 2
WINDOW_S = 5.0
"""The page-cache window given to lag: the backlog is minutes old by the HWM history, far beyond it."""


class Publisher:
    """Publishes the canary's per-broker latency to the board every second on a thread, until stopped."""

    def __init__(self, board: CanaryLatencyBoard) -> None:
        self.board = board
        self.last: dict[int, Any] = {}
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="canary-latency-board", daemon=True)

    def _loop(self) -> None:
        while not self._halt.wait(1.0):
            self.last = self.board.publish()

    def __enter__(self) -> Publisher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._halt.set()
        self._thread.join(timeout=10)


@pytest.fixture
def workload(kafka: KafkaHandle, tmp_path: Path) -> Iterator[NoisyNeighbourWorkload]:
    version = kafka.cluster.spec.kafka_version
    plan = NoisyPlan(
        broker=BROKER, prefix=f"nn-{uuid.uuid4().hex[:6]}", backlog_records=16_384, reader_bytes_per_s=32 * 1024
    )
    noisy = NoisyNeighbourWorkload(
        ensure_runtime(version, cache_dir()), ensure_tools(version, cache_dir()), tmp_path / "noisy",
        kafka.bootstrap_servers, plan,
    )  # fmt: skip
    noisy.start()
    try:
        yield noisy
    finally:
        noisy.stop()


def named(text: str, group: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("kafka_pulse_noisy_neighbour{") and group in line]


def test_the_group_reading_from_disk_on_the_slowed_broker_is_named(
    kafka: KafkaHandle, workload: NoisyNeighbourWorkload, tmp_path: Path
) -> None:
    plan = workload.plan
    settings = {
        "clusters": [{"name": DEV_CLUSTER_NAME, "bootstrap_servers": kafka.bootstrap_servers.split(",")}],
        "lag": {
            "intervals": 3, "offset_refresh_s": 1, "stale_after_s": 20, "group_allow": f"^{plan.prefix}-",
            "page_cache": {"enabled": True, "window_s": WINDOW_S},
            "exact_time_lag": {"enabled": True, "interval_s": 1},
        },
    }  # fmt: skip
    config = parse_config(yaml.safe_dump(settings), "pulse.yaml", {})
    board = BrokerHealthBoard()
    runner = LagRunner(config, config.clusters, state=tmp_path / "state", broker_health=board)
    server = serve_lag_api(runner.service, runner.registry)
    status_url = f"{server.url}/v3/kafka/{DEV_CLUSTER_NAME}/consumer/{plan.reader_group}/status"
    runner.start()
    try:
        with (
            running_canary(kafka, replication_factor=1, min_insync_replicas=1) as (_canary, sink),
            Publisher(CanaryLatencyBoard(sink, board, DEV_CLUSTER_NAME)) as publisher,
        ):
            # the reader is far behind: its partitions read beyond the page cache (lag's own hint, no board needed)
            poll(
                lambda: runner.service.group_status(DEV_CLUSTER_NAME, plan.reader_group),
                lambda s: s.beyond_page_cache is True,
                60,
                f"group {plan.reader_group} reading beyond the {WINDOW_S:g} s page cache",
                interval_s=0.5,
            )
            with stutter_node(kafka.cluster, BROKER, StutterPlan(stop_ms=300, period_ms=1000)):
                metrics, _ = poll(
                    lambda: (httpx.get(f"{server.url}/metrics", timeout=10).text, publisher.last),
                    lambda seen: bool(named(seen[0], plan.reader_group)),
                    60,
                    f"kafka_pulse_noisy_neighbour naming {plan.reader_group} on broker {BROKER} (last: the board)",
                    interval_s=1.0,
                )
                status = httpx.get(status_url, timeout=10).json()["status"]
                sections = run_check(config.model_copy(update={"http": config.http.model_copy(
                    update={"listen": server.address})}), config.clusters[0], Deadline.after(30))  # fmt: skip
    finally:
        runner.stop()
        server.stop()

    # /metrics: exactly this group, its backlog topic, broker 2 (the victim topic's producers are not named)
    [line] = named(metrics, plan.reader_group)
    assert f'broker="{BROKER}"' in line and f'topic="{plan.backlog_topic}"' in line, line
    assert plan.victim_topic not in "".join(named(metrics, ""))
    # the lag API's why
    [diagnosis] = status["noisy_neighbour"]
    assert (diagnosis["broker"], diagnosis["topic"]) == (BROKER, plan.backlog_topic), json.dumps(status)
    assert diagnosis["lag_seconds"] > diagnosis["page_cache_window_s"] == WINDOW_S
    assert diagnosis["produce_latency_ms"] > 50.0
    assert f"noisy neighbour on broker {BROKER}: group {plan.reader_group}" in diagnosis["why"]
    # check: a WARN line naming broker, group and topic with the numbers
    lag = next(s for s in sections if s.name == "lag")
    assert lag.status.value == "WARN", lag
    line_ = next(r for r in lag.reasons if r.startswith("noisy neighbour"))
    assert f"broker {BROKER}: group {plan.reader_group} reads topic {plan.backlog_topic}" in line_, line_
    assert "page cache" in line_ and " ms)" in line_
    assert [n["group"] for n in lag.details["noisy_neighbours"]] == [plan.reader_group]
